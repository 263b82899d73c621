#!/usr/bin/env python3
"""Receives rein's webhooks, verifies their Standard Webhooks signature, and posts a short
message with the run's console link to a chat channel's incoming webhook (Slack-compatible:
a JSON body {"text": ...}). Standard library only.

  receiver.py --port 8099 --secret_file hook.key --chat_url https://hooks.slack.com/services/...

rein side: --webhook_url=http://HOST:8099/rein,secret_file=hook.key --console_url=https://...
The secret file is the same for both (raw key bytes, or whsec_<base64>).
"""
import argparse
import base64
import hashlib
import hmac
import json
import sys
import time
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

MAX_BODY = 1 << 20
TOLERANCE_SECONDS = 300


def load_key(path):
    with open(path, "rb") as f:
        secret = f.read().strip()
    if secret.startswith(b"whsec_"):
        return base64.b64decode(secret[len(b"whsec_"):], validate=True)
    return secret


def verify(key, headers, body):
    msg_id = headers.get("webhook-id", "")
    ts = headers.get("webhook-timestamp", "")
    sigs = headers.get("webhook-signature", "")
    if not msg_id or not ts.isdigit() or abs(time.time() - int(ts)) > TOLERANCE_SECONDS:
        return False
    mac = hmac.new(key, f"{msg_id}.{ts}.".encode() + body, hashlib.sha256).digest()
    expected = base64.b64encode(mac).decode()
    return any(hmac.compare_digest(expected, s.split(",", 1)[1])
               for s in sigs.split() if s.startswith("v1,"))


def message(event):
    data = event.get("data", {})
    run = event.get("subject", "?")
    kind = event.get("type", "").rsplit(".", 1)[-1]
    if kind == "paused":
        pause = data.get("pause", {})
        what = pause.get("question") or pause.get("detail") or pause.get("reason", "")
        text = f"Run {run} is waiting for you ({pause.get('reason', '')}): {what}"
    else:
        outcome = data.get("outcome", {})
        text = f"Run {run} {kind}: {outcome.get('reason', '')} {outcome.get('message', '')}".strip()
    text += f"\nGoal: {data.get('goal', '')}"
    if data.get("console_url"):
        text += f"\n{data['console_url']}"
    return text


class Handler(BaseHTTPRequestHandler):
    seen = set()  # webhook-ids already posted: rein may deliver a notice more than once

    def do_POST(self):
        length = int(self.headers.get("content-length", "0"))
        if length > MAX_BODY:
            self.send_response(413)
            self.end_headers()
            return
        body = self.rfile.read(length)
        headers = {k.lower(): v for k, v in self.headers.items()}
        if not verify(self.server.key, headers, body):
            self.send_response(401)
            self.end_headers()
            return
        msg_id = headers["webhook-id"]
        if msg_id not in Handler.seen:
            text = message(json.loads(body))
            req = urllib.request.Request(self.server.chat_url, method="POST",
                                         data=json.dumps({"text": text}).encode(),
                                         headers={"Content-Type": "application/json"})
            try:
                urllib.request.urlopen(req, timeout=10).read()
            except Exception as e:  # the chat is down: answer 503 so rein retries
                print(f"chat post failed: {e}", file=sys.stderr)
                self.send_response(503)
                self.end_headers()
                return
            Handler.seen.add(msg_id)
        self.send_response(204)
        self.end_headers()

    def log_message(self, *args):
        pass


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--secret_file", required=True)
    p.add_argument("--chat_url", required=True)
    a = p.parse_args()
    server = ThreadingHTTPServer(("127.0.0.1", a.port), Handler)
    server.key = load_key(a.secret_file)
    server.chat_url = a.chat_url
    print(f"listening on 127.0.0.1:{server.server_address[1]}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
