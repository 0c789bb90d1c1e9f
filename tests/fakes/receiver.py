"""A webhook receiver started by the tests on 127.0.0.1: it keeps every request it got.

Its answers can be scripted: ``answer_next(500)`` for the next requests, ``hang()`` to hold
every request until ``release()`` (a receiver that never answers in time).

By default it answers in HTTP/1.0 and closes each connection. ``keep_alive=True`` answers in
HTTP/1.1 and keeps them; ``drop_idle=True`` with it closes each connection after its answer
without saying so (as a server whose keep-alive timeout ran out); ``tls`` serves HTTPS with
that context, noting the SNI name of each handshake. ``connections`` counts the connections
it accepted.
"""

from __future__ import annotations

import json
import ssl
import threading
from collections import deque
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass
class Received:
    path: str
    headers: dict[str, str]
    body: bytes

    @property
    def json(self) -> dict:
        return json.loads(self.body)

    @property
    def signature(self) -> str:
        return self.headers.get("reseller-signature", "")


class Receiver:
    def __init__(
        self,
        *,
        keep_alive: bool = False,
        drop_idle: bool = False,
        tls: ssl.SSLContext | None = None,
        host: str = "127.0.0.1",
    ) -> None:
        self.keep_alive, self.drop_idle, self.host = keep_alive, drop_idle, host
        self.connections = 0
        self.payload = b'{"received": true}'
        self.echo = False  # answer with the body received, as some receivers do
        self.sni: list[str | None] = []
        self.lock = threading.Condition()  # notified as each request arrives (wait_for)
        self.requests: list[Received] = []
        self.script: deque[int] = deque()
        self.held = threading.Event()
        self.held.set()
        self.arrived = threading.Event()
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.server.daemon_threads = True
        if tls is not None:
            tls.sni_callback = self._note_sni
            self.server.socket = tls.wrap_socket(self.server.socket, server_side=True)
        self.scheme = "https" if tls is not None else "http"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"{self.scheme}://{self.host}:{self.server.server_address[1]}/hooks"

    def _note_sni(self, _socket, name, _context) -> None:
        with self.lock:
            self.sni.append(name)

    def start(self) -> Receiver:
        self.thread.start()
        return self

    def stop(self) -> None:
        self.release()
        self.server.shutdown()
        self.server.server_close()

    def answer_next(self, *statuses: int) -> None:
        with self.lock:
            self.script.extend(statuses)

    def hang(self) -> None:
        self.held.clear()

    def release(self) -> None:
        self.held.set()

    def events(self) -> list[dict]:
        with self.lock:
            return [request.json for request in self.requests]

    def wait_for(self, count: int, timeout: float = 20.0) -> list[Received]:
        with self.lock:
            if not self.lock.wait_for(lambda: len(self.requests) >= count, timeout):
                raise AssertionError(f"expected {count} requests, got {len(self.requests)}")
            return list(self.requests)

    def _handler(self):
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1" if receiver.keep_alive else "HTTP/1.0"

            def setup(self):
                super().setup()
                with receiver.lock:
                    receiver.connections += 1

            def log_message(self, *args):
                pass

            def do_POST(self):
                length = int(self.headers.get("Content-Length", "0"))
                body = self.rfile.read(length)
                with receiver.lock:
                    receiver.requests.append(
                        Received(self.path, {k.lower(): v for k, v in self.headers.items()}, body)
                    )
                    receiver.lock.notify_all()
                    status = receiver.script.popleft() if receiver.script else 200
                receiver.arrived.set()
                receiver.held.wait(timeout=60)
                payload = body if receiver.echo else receiver.payload
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload)
                    self.wfile.flush()
                    if receiver.drop_idle:
                        self.close_connection = True
                except OSError:
                    pass  # the sender gave up (timeout) or was killed

        return Handler
