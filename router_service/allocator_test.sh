#!/usr/bin/env bash
# The built rein-router runs on the allocator it is meant to (BUILD says which and why). Its
# "serving" log line names the allocator the process found in use (common/memory.h), so a build
# that links another one, or drops the one meant, fails here.
#   allocator_test.sh ROUTER_BINARY ALLOCATOR   (glibc, tcmalloc or jemalloc)
set -euo pipefail

router="$1"
want="$2"
dir="$(mktemp -d "${TEST_TMPDIR:-/tmp}/allocator.XXXXXX")"
log="$dir/router.log"
# Planner and executor are never called: the router only has to start.
"$router" --listen=127.0.0.1:0 --store="sqlite:$dir/rein.db" \
  --planner_target=127.0.0.1:1 --executor_target=127.0.0.1:1 2>"$log" &
pid=$!
trap 'kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true' EXIT

for _ in $(seq 1 600); do
  grep -q '"msg":"serving"' "$log" && break
  kill -0 "$pid" 2>/dev/null || break
  sleep 0.1
done
line="$(grep '"msg":"serving"' "$log" || true)"
if [ -z "$line" ]; then
  echo "FAIL: rein-router did not start; its log:" >&2
  cat "$log" >&2
  exit 1
fi
if ! grep -q "\"allocator\":\"$want\"" <<<"$line"; then
  echo "FAIL: rein-router does not run on $want: $line" >&2
  exit 1
fi
echo "PASS: $line"
