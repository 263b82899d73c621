#!/bin/bash
# The router loop's cost per iteration with tracing off, with tracing on (100% sampling) to an
# OTLP collector that answers 200 to every export, and to one that hangs (accepts connections,
# never answers), alternating in one window. Prints bench/router_bench's one-run line for each
# round. Not a test: figures for docs/TRACING.md. Usage, from the workspace root:
#   bazel build //bench:router_bench //router_service:rein-router
#   bench/trace_hang_bench.sh [rounds=3] [iterations=300]
set -euo pipefail
rounds=${1:-3}
iterations=${2:-300}
bench=bazel-bin/bench/router_bench
router=bazel-bin/router_service/rein-router
[[ -x $bench && -x $router ]] || { echo "build //bench:router_bench //router_service:rein-router first" >&2; exit 2; }
scratch=$(mktemp -d)
trap 'kill "$hang_pid" "$answer_pid" 2>/dev/null || true; rm -rf "$scratch"' EXIT

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

# The answering collector: HTTP/1.1 with keep-alive, reads each POST whole, answers 200 with an
# empty ExportTraceServiceResponse, counts the requests.
python3 -c '
import http.server, sys
class Sink(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    count = 0
    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", "0")
        self.end_headers()
        Sink.count += 1
        open(sys.argv[2], "w").write(str(Sink.count))
    def log_message(self, *args): pass
server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Sink)
open(sys.argv[1], "w").write(str(server.server_address[1]))
server.serve_forever()
' "$scratch/answer_port" "$scratch/answered" &
answer_pid=$!
for _ in $(seq 50); do [[ -s $scratch/port && -s $scratch/answer_port ]] && break; sleep 0.1; done

# The traced routers: the same binary, its OTEL_* set to a collector (100% sampling, an export
# attempt every 100 ms, each given up after 1 s).
for mode in hanging answering; do
  port=$(cat "$scratch/port")
  [[ $mode == answering ]] && port=$(cat "$scratch/answer_port")
  cat > "$scratch/router-$mode" <<WRAP
#!/bin/bash
export OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:$port
export OTEL_BSP_SCHEDULE_DELAY=100 OTEL_EXPORTER_OTLP_TIMEOUT=1000 OTEL_TRACES_SAMPLER=always_on
exec $PWD/$router "\$@"
WRAP
  chmod +x "$scratch/router-$mode"
done

flags=(--iterations="$iterations" --concurrent_runs=0 --large_runs=0 --watchers=0 --memory_runs=0)
for round in $(seq "$rounds"); do
  for mode in off answering hanging; do
    bin=$router
    [[ $mode != off ]] && bin=$scratch/router-$mode
    line=$(env -u OTEL_EXPORTER_OTLP_ENDPOINT -u OTEL_EXPORTER_OTLP_TRACES_ENDPOINT \
      "$bench" --router_binary="$bin" "${flags[@]}" 2>/dev/null | grep -m1 "^1 run: " || true)
    printf 'round %d  tracing %-8s %s\n' "$round" "$mode" "${line:-<no result>}"
  done
done
echo "the answering collector answered $(cat "$scratch/answered" 2>/dev/null || echo 0) exports"
echo "the hanging collector accepted $(cat "$scratch/accepted" 2>/dev/null || echo 0) connections and answered none"
