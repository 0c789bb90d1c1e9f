"""The HTTP server the three provider fakes share: HTTP/1.1 with kept connections, as the
providers' own front ends answer, and an outage that closes them.

- **Kept connections.** Reloadly, DT One and DingConnect answer HTTP/1.1 and keep the
  connection for the next call; so does our client (``upstreams/adapters/client.py``).
  ``http.server`` answers HTTP/1.0 by default and closes every connection, which made each
  call of the tests and the bench open a TCP connection, and the fake start a thread for it
  (docs/performance.md).
- **No Nagle.** ``http.server`` writes the headers and the body in two writes. Without
  ``TCP_NODELAY`` the body waits for the client's delayed ACK: 40 ms a call on a kept
  connection.
- **Whole requests.** A request's body is read before the fake answers it, whatever the
  answer: on a kept connection, a body left unread would be taken for the next request.
- **Requests in progress.** A ``Tally`` counts the connections accepted and not yet
  answered, and then each request from its first line to its answer. A kept connection that
  waits for its next request is not counted, so ``settle`` sees what is still on the wire. A
  fake passes its own ``Tally`` to every server it starts, so a request accepted before an
  outage is still counted after it.
- **An outage closes everything.** ``server_close`` closes the listening socket (connections
  are refused) and every kept connection: an idle one at once, one in a request after its
  answer (sent with ``Connection: close``), as a provider's service that stops does. A request
  that reaches a kept connection as the outage begins is not acted on. A connection left open
  would still reach a service that is down.
"""

from __future__ import annotations

import contextlib
import io
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class Tally:
    """Requests in progress at one fake, across the servers an outage replaces; its lock
    guards the servers' state too."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.value = 0


class KeptServer(ThreadingHTTPServer):
    daemon_threads = True  # a slow answer does not hold up an outage or a stop
    allow_reuse_address = True  # listen again on the same port after an outage
    # A provider's front end holds a burst of new connections; socketserver's backlog of 5
    # resets the rest, which the processor rightly takes for unclear answers.
    request_queue_size = 1024

    def __init__(self, *args, tally: Tally | None = None, **kwargs) -> None:
        self.tally = tally or Tally()
        self.accepted = 0  # connections, since it listens
        self.closing = False
        self._fresh: set[socket.socket] = set()  # counted, and no handler has taken them yet
        self._handlers: set[KeptHandler] = set()
        super().__init__(*args, **kwargs)

    def process_request(self, request, client_address) -> None:
        with self.tally.lock:
            self.accepted += 1
            self.tally.value += 1  # its first request, until its handler answers it
            self._fresh.add(request)
        super().process_request(request, client_address)

    def shutdown_request(self, request) -> None:
        # Always called, even when no handler took the connection (its setup failed).
        with self.tally.lock:
            if request in self._fresh:
                self._fresh.discard(request)
                self.tally.value -= 1
        super().shutdown_request(request)

    def server_close(self) -> None:
        super().server_close()
        with self.tally.lock:
            self.closing = True
            for handler in self._handlers:
                if not handler.counted:  # waiting for its next request
                    handler.hang_up()


class KeptHandler(BaseHTTPRequestHandler):
    """The base of each fake's handler; ``self.server`` is a ``KeptServer``."""

    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True
    server: KeptServer

    def setup(self) -> None:
        super().setup()
        with self.server.tally.lock:
            self.server._fresh.discard(self.request)
            self.counted = True  # counted by ``process_request`` until its first answer
            self.server._handlers.add(self)

    def parse_request(self) -> bool:
        with self.server.tally.lock:
            if not self.counted:
                if self.server.closing:  # came on a kept connection as the outage began
                    self.close_connection = True
                    return False
                self.server.tally.value += 1
                self.counted = True
        if not super().parse_request():
            return False
        # The whole body is read before the fake answers, whatever it answers (a 401 before
        # reading it, say): what it leaves unread would be taken for the next request line.
        if self.headers.get("Transfer-Encoding"):
            self.send_error(411, "A Content-Length is required")
            return False
        try:
            length = int(self.headers.get("Content-Length") or 0)
        except ValueError:
            self.send_error(400, "Bad Content-Length")
            return False
        self.rfile = io.BytesIO(self._wire.read(length) if length > 0 else b"")
        return True

    def end_headers(self) -> None:
        if self.server.closing:  # the outage began during this request: its last answer
            self.send_header("Connection", "close")
        super().end_headers()

    def handle_one_request(self) -> None:
        self._wire = self.rfile  # the connection's; a request's body replaces it until answered
        try:
            super().handle_one_request()
        except (ConnectionResetError, BrokenPipeError):  # the client went (a worker stopped)
            self.close_connection = True
        finally:
            self.rfile = self._wire
            self._answered()

    def finish(self) -> None:
        try:
            with contextlib.suppress(OSError):
                super().finish()
        finally:
            with self.server.tally.lock:
                self.server._handlers.discard(self)

    def _answered(self) -> None:
        with self.server.tally.lock:
            if self.counted:
                self.server.tally.value -= 1
                self.counted = False
            if self.server.closing:
                self.close_connection = True

    def hang_up(self) -> None:
        """Close the connection under the handler waiting on it (an outage)."""
        with contextlib.suppress(OSError):
            self.connection.shutdown(socket.SHUT_RDWR)
