#!/usr/bin/env python3
"""A webhook receiver for benchmarks: answers 204 to every POST on 127.0.0.1:PORT and counts
them (printed at exit). Used with bench/with_webhooks.sh to run router_bench with webhooks on
(docs/WEBHOOKS.md)."""
import http.server
import signal
import sys


class Sink(http.server.BaseHTTPRequestHandler):
    received = 0

    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length", "0")))
        Sink.received += 1
        self.send_response(204)
        self.end_headers()

    def log_message(self, *args):
        pass


def main():
    port = int(sys.argv[1]) if len(sys.argv) > 1 else 18080
    server = http.server.ThreadingHTTPServer(("127.0.0.1", port), Sink)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    try:
        server.serve_forever()
    except (KeyboardInterrupt, SystemExit):
        pass
    print(f"webhook_sink: {Sink.received} notices received", flush=True)


if __name__ == "__main__":
    main()
