"""A minimal webhook receiver for trying the webhooks out (docs/webhooks.md).

    WEBHOOK_SECRET=whsec_… .venv/bin/python docs/examples/webhook_receiver.py 9000

It checks the Reseller-Signature of every POST with the project's own helper, prints the
event, and answers 200 (or 400 to a bad signature, which the sender retries). Keep the
raw body: the signature is over the exact bytes received, not over re-serialised JSON.
"""

from __future__ import annotations

import json
import os
import sys
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root

from webhooks.signature import SignatureVerificationError, verify_signature

SECRET = os.environ.get("WEBHOOK_SECRET", "")
seen: set[str] = set()  # receivers de-duplicate by event id: delivery is at least once


class Handler(BaseHTTPRequestHandler):
    def do_POST(self):
        raw = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        try:
            verify_signature(raw, self.headers.get("Reseller-Signature"), SECRET)
        except SignatureVerificationError as exc:
            print(f"refused: {exc}", flush=True)
            self.send_response(400)
            self.end_headers()
            return
        event = json.loads(raw)
        if event["id"] not in seen:
            seen.add(event["id"])
            obj = event["data"]["object"]
            print(event["type"], event["id"], obj.get("id", ""), obj.get("status", ""), flush=True)
        self.send_response(200)
        self.end_headers()

    def log_message(self, *args):
        pass


if __name__ == "__main__":
    port = int(sys.argv[1]) if len(sys.argv) > 1 else 9000
    print(f"listening on http://127.0.0.1:{port}/hooks", flush=True)
    HTTPServer(("127.0.0.1", port), Handler).serve_forever()
