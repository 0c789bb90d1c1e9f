"""A local HTTP fake of Reloadly's Airtime API, started by the tests on 127.0.0.1.

It keeps what a real provider keeps: issued tokens, top-ups by custom identifier, and a
count of POST /topups calls per reference, so tests can prove that nothing was sent twice.
Behaviour for the next calls can be scripted: ``fail_next(status, body)`` or
``slow_next(seconds)`` (answers after the client gave up, having made the top-up).
"""

from __future__ import annotations

import contextlib
import itertools
import json
import threading
import time
from collections import Counter, deque
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlparse


class FakeReloadly:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.tokens: set[str] = set()
        self.token_requests = 0
        self.topups: dict[str, dict] = {}
        self.calls: Counter[str] = Counter()
        self.script: deque[tuple[str, object]] = deque()
        self.lookup_script: deque[int] = deque()
        self.delay = 0.0  # seconds every top-up takes, to keep work in flight
        # A provider that lists a top-up in its reports only once it has answered the call
        # (while it works, a lookup finds nothing, but the reference is already taken).
        self.list_after_answer = False
        self.answered: set[str] = set()
        self.active = 0  # top-up calls being answered now
        self.max_concurrent_topups = 0
        self._ids = itertools.count(1000)
        self.open_connections = 0  # accepted and not yet answered, whatever the path
        self.server = _CountingServer(self, ("127.0.0.1", 0), self._handler())
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def start(self) -> FakeReloadly:
        self.thread.start()
        return self

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def settle(self, *, quiet: float = 1.0, timeout: float = 60.0) -> bool:
        """Wait until every request already on the wire has been answered and nothing new has
        arrived for ``quiet`` seconds: what a killed client sent before it died still lands.
        Production's sweeper only reconciles a call after RECHARGE_STUCK_DISPATCHED_SECONDS
        (minutes, far past the provider timeout); a test that sets it to 0 settles first."""
        deadline = time.monotonic() + timeout
        last = (-1, -1)
        calm_since = time.monotonic()
        while time.monotonic() < deadline:
            with self.lock:
                now = (self.open_connections, sum(self.calls.values()))
            if now != last or now[0]:
                last, calm_since = now, time.monotonic()
            elif time.monotonic() - calm_since >= quiet:
                return True
            time.sleep(0.05)
        return False

    # -- scripting --------------------------------------------------------------------
    def fail_next(self, status: int, body: dict | None = None, headers: dict | None = None):
        self.script.append(("fail", (status, body or {}, headers or {})))

    def fail_next_lookup(self, status: int) -> None:
        """The next status lookup (``GET /topups/reports/transactions``) answers ``status``."""
        self.lookup_script.append(status)

    def slow_next(self, seconds: float) -> None:
        self.script.append(("slow", seconds))

    def expire_tokens(self) -> None:
        with self.lock:
            self.tokens.clear()

    def _handler(self):
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # keep test output clean
                pass

            def _send(self, status: int, body: dict, headers: dict | None = None):
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for name, value in (headers or {}).items():
                    self.send_header(name, value)
                self.end_headers()
                with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                    self.wfile.write(data)

            def _body(self) -> dict | None:
                """The JSON body, or None when it is cut short (a client killed mid-send):
                a provider acts on no half a request."""
                length = int(self.headers.get("Content-Length") or 0)
                data = self.rfile.read(length)
                if len(data) < length:
                    return None
                try:
                    return json.loads(data or b"{}")
                except ValueError:
                    return None

            def _authorised(self) -> bool:
                auth = self.headers.get("Authorization", "")
                with fake.lock:
                    return auth.startswith("Bearer ") and auth[7:] in fake.tokens

            def do_POST(self):
                path = urlparse(self.path).path
                if path == "/oauth/token":
                    body = self._body() or {}
                    if body.get("grant_type") != "client_credentials":
                        return self._send(400, {"message": "bad grant"})
                    with fake.lock:
                        fake.token_requests += 1
                        token = f"tok-{fake.token_requests}"
                        fake.tokens.add(token)
                    return self._send(
                        200, {"access_token": token, "expires_in": 3600, "token_type": "Bearer"}
                    )
                if path == "/topups":
                    return self._topup()
                return self._send(404, {"message": "not found"})

            def _topup(self):
                with fake.lock:
                    fake.active += 1
                    fake.max_concurrent_topups = max(fake.max_concurrent_topups, fake.active)
                try:
                    return self._topup_answer()
                finally:
                    with fake.lock:
                        fake.active -= 1

            def _topup_answer(self):
                if not self._authorised():
                    return self._send(401, {"errorCode": "TOKEN_EXPIRED", "message": "expired"})
                body = self._body()
                if body is None or not body.get("customIdentifier"):
                    return self._send(400, {"errorCode": "BAD_REQUEST", "message": "bad body"})
                reference = body["customIdentifier"]
                action = fake.script.popleft() if fake.script else None
                if action and action[0] == "fail":
                    status, fail_body, headers = action[1]
                    with fake.lock:
                        fake.calls[reference] += 1
                    return self._send(status, fail_body, headers)
                with fake.lock:
                    fake.calls[reference] += 1
                    if reference in fake.topups:
                        return self._send(
                            409,
                            {"errorCode": "DUPLICATED_CUSTOM_IDENTIFIER", "message": "duplicate"},
                        )
                    number = body.get("recipientPhone", {}).get("number", "")
                    if number.endswith("0000000"):
                        return self._send(
                            400,
                            {
                                "errorCode": "INVALID_RECIPIENT_PHONE",
                                "message": "The phone number is not valid",
                            },
                        )
                    record = {
                        "transactionId": next(fake._ids),
                        "status": "SUCCESSFUL",
                        "customIdentifier": reference,
                        "operatorId": body.get("operatorId"),
                        "requestedAmount": body.get("amount"),
                        "recipientPhone": number,
                    }
                    fake.topups[reference] = record
                if action and action[0] == "slow":
                    time.sleep(float(action[1]))
                elif fake.delay:
                    time.sleep(fake.delay)
                with fake.lock:
                    fake.answered.add(reference)
                return self._send(200, record)

            def do_GET(self):
                url = urlparse(self.path)
                if not self._authorised():
                    return self._send(401, {"errorCode": "TOKEN_EXPIRED"})
                if url.path == "/accounts/balance":
                    return self._send(200, {"balance": 550.75, "currencyCode": "EUR"})
                if url.path == "/topups/reports/transactions":
                    if fake.lookup_script:
                        return self._send(fake.lookup_script.popleft(), {"message": "down"})
                    reference = parse_qs(url.query).get("customIdentifier", [""])[0]
                    with fake.lock:
                        found = fake.topups.get(reference)
                        if fake.list_after_answer and reference not in fake.answered:
                            found = None
                    return self._send(200, {"content": [found] if found else []})
                return self._send(404, {"message": "not found"})

        return Handler


class _CountingServer(ThreadingHTTPServer):
    """Counts connections from accept to close, so ``settle`` sees requests still queued."""

    daemon_threads = True

    def __init__(self, fake: FakeReloadly, *args) -> None:
        self.fake = fake
        super().__init__(*args)

    def process_request(self, request, client_address):
        with self.fake.lock:
            self.fake.open_connections += 1
        super().process_request(request, client_address)

    def shutdown_request(self, request):
        try:
            super().shutdown_request(request)
        finally:
            with self.fake.lock:
                self.fake.open_connections -= 1
