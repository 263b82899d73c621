#!/bin/bash
# Smoke test of bench/abuse_bench: a --quick run ends on its own and prints every BENCH line,
# well formed (key, a number, a unit). It checks the shape of the figures, never their values.
set -u
bench="$1"
out="$TEST_TMPDIR/abuse_bench.out"
if ! timeout 170 "$bench" --quick --dir="$TEST_TMPDIR/abuse" >"$out" 2>&1; then
  echo "abuse_bench --quick failed or overran:"; cat "$out"; exit 1
fi
status=0
for service in router planner executor; do
  for figure in idle_mib after_mib after_10s_mib ratio_10s; do
    key="memory.$service.$figure"
    if ! grep -qP "^BENCH\t\Q$key\E\t[0-9]+(\.[0-9]+)?\t(MiB|x)$" "$out"; then
      echo "missing or malformed: $key"; status=1
    fi
  done
done
grep -q "router RSS with 200 runs in flight" "$out" || { echo "no in-flight figure"; status=1; }
[ $status -eq 0 ] || cat "$out"
exit $status
