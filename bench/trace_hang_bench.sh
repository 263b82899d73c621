#!/bin/bash
# The router loop's cost per iteration with tracing on against an OTLP collector that hangs
# (accepts connections, never answers), beside tracing off, alternating in one window.
# Prints bench/router_bench's one-run line for each round. Not a test: figures for
# docs/TRACING.md. Usage, from the workspace root:
#   bazel build //bench:router_bench //router_service:rein-router
#   bench/trace_hang_bench.sh [rounds=3] [iterations=300]
set -euo pipefail
rounds=${1:-3}
iterations=${2:-300}
bench=bazel-bin/bench/router_bench
router=bazel-bin/router_service/rein-router
[[ -x $bench && -x $router ]] || { echo "build //bench:router_bench //router_service:rein-router first" >&2; exit 2; }
scratch=$(mktemp -d)
trap 'kill "$hang_pid" 2>/dev/null || true; rm -rf "$scratch"' EXIT

# The hanging collector: every connection is accepted and kept, nothing is ever read or sent.
python3 -c '
import socket, sys, time
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(1024)
open(sys.argv[1], "w").write(str(s.getsockname()[1]))
held = []
while True:
    c, _ = s.accept(); held.append(c)
    open(sys.argv[2], "w").write(str(len(held)))
' "$scratch/port" "$scratch/accepted" &
hang_pid=$!
for _ in $(seq 50); do [[ -s $scratch/port ]] && break; sleep 0.1; done
port=$(cat "$scratch/port")

# The traced router: the same binary, its OTEL_* set to the hanging collector (100% sampling,
# an export attempt every 100 ms, each given up after 1 s).
cat > "$scratch/traced-router" <<WRAP
#!/bin/bash
export OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:$port
export OTEL_BSP_SCHEDULE_DELAY=100 OTEL_EXPORTER_OTLP_TIMEOUT=1000 OTEL_TRACES_SAMPLER=always_on
exec $PWD/$router "\$@"
WRAP
chmod +x "$scratch/traced-router"

flags=(--iterations="$iterations" --concurrent_runs=0 --large_runs=0 --watchers=0 --memory_runs=0)
for round in $(seq "$rounds"); do
  for mode in off hanging; do
    bin=$router
    [[ $mode == hanging ]] && bin=$scratch/traced-router
    line=$(env -u OTEL_EXPORTER_OTLP_ENDPOINT -u OTEL_EXPORTER_OTLP_TRACES_ENDPOINT \
      "$bench" --router_binary="$bin" "${flags[@]}" 2>/dev/null | grep -m1 "^1 run: " || true)
    printf 'round %d  tracing %-8s %s\n' "$round" "$mode" "${line:-<no result>}"
  done
done
echo "the hanging collector accepted $(cat "$scratch/accepted" 2>/dev/null || echo 0) connections and answered none"
