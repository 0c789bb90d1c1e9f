"""POSTing a delivery to a receiver: at the address the SSRF check resolved, over a kept
connection.

Every send resolves the URL again and checks every address (``targets.resolve``); the
request then goes to the first checked address, never to a second DNS answer, with the URL's
host in the ``Host`` header and, over TLS, as the SNI name and the name the certificate must
match. Redirects are not followed (``http.client`` never does) and no proxy is read from the
environment.

A connection is kept after a complete answer and used again for the same scheme, host, port
and address: a drain sends its endpoint's deliveries one after the other, so a busy endpoint
costs one TCP (and TLS) handshake per drain instead of one per event. A kept connection the
receiver has closed meanwhile fails before any answer; the request is then sent once more on
a new one (a receiver may so see an event twice, which at-least-once delivery allows).

``http.client`` rather than httpx here: per delivery it costs a fifth of httpx's CPU, which
the delivery worker spends beside the processor on the same machine (docs/performance.md).
"""

from __future__ import annotations

import functools
import http.client
import socket
import ssl
import threading
import time
from dataclasses import dataclass
from urllib.parse import urlsplit

from django.conf import settings

from webhooks.targets import Target, UnsafeTarget, resolve

RESPONSE_HEAD_BYTES = 500
USER_AGENT = "reseller-webhooks/1"
CONNECT_TIMEOUT_SECONDS = 5.0
# Read past the head so that the connection can be used again; a longer answer closes it.
DRAIN_BYTES = 64 * 1024
KEEP_IDLE_SECONDS = 30.0  # under the keep-alive timeout of common servers' defaults (60-75 s)
KEEP_PER_TARGET = 4
KEEP_TOTAL = 64


@dataclass(frozen=True)
class Answer:
    status_code: int | None
    latency_ms: int
    head: str
    error: str

    @property
    def ok(self) -> bool:
        return self.status_code is not None and 200 <= self.status_code < 300


Key = tuple[str, str, int, str]  # scheme, host, port, address


@functools.cache
def _tls() -> ssl.SSLContext:
    """Certificates checked against certifi's authorities, as httpx and requests do."""
    import certifi

    return ssl.create_default_context(cafile=settings.WEBHOOK_CA_FILE or certifi.where())


def _connection(key: Key) -> http.client.HTTPConnection:
    scheme, host, port, address = key

    def connect(_host_port, timeout, source_address):
        # The checked address, never the host's name: no second DNS answer.
        return socket.create_connection(
            (address, port), min(timeout, CONNECT_TIMEOUT_SECONDS), source_address
        )

    timeout = settings.WEBHOOK_TIMEOUT_SECONDS
    conn: http.client.HTTPConnection
    if scheme == "https":
        # The host's name is the SNI name and the one the certificate must match.
        conn = http.client.HTTPSConnection(host, port, timeout=timeout, context=_tls())
    else:
        conn = http.client.HTTPConnection(host, port, timeout=timeout)
    conn._create_connection = connect  # type: ignore[attr-defined]
    return conn


class _Kept:
    """Idle connections by target, shared by a process's threads (each used by one at once)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.idle: dict[Key, list[tuple[float, http.client.HTTPConnection]]] = {}

    def take(self, key: Key) -> http.client.HTTPConnection | None:
        now = time.monotonic()
        stale: list[http.client.HTTPConnection] = []
        found = None
        with self.lock:
            kept = self.idle.get(key, [])
            while kept:
                since, conn = kept.pop()
                if now - since < KEEP_IDLE_SECONDS:
                    found = conn
                    break
                stale.append(conn)
            if not kept:
                self.idle.pop(key, None)
        for conn in stale:
            conn.close()
        return found

    def give(self, key: Key, conn: http.client.HTTPConnection) -> None:
        with self.lock:
            kept = self.idle.setdefault(key, [])
            total = sum(len(conns) for conns in self.idle.values())
            if len(kept) < KEEP_PER_TARGET and total < KEEP_TOTAL:
                kept.append((time.monotonic(), conn))
                return
        conn.close()

    def close_all(self) -> None:
        with self.lock:
            idle, self.idle = self.idle, {}
        for conns in idle.values():
            for _since, conn in conns:
                conn.close()


kept = _Kept()

# Raised by a kept connection the receiver closed while it was idle: worth one more try.
_STALE = (ConnectionResetError, BrokenPipeError, ssl.SSLEOFError)


def post(url: str, body: bytes, headers: dict[str, str]) -> Answer:
    """POST ``body`` to ``url`` at the address the SSRF check resolved; never raises."""
    started = time.monotonic()
    deadline = started + settings.WEBHOOK_TIMEOUT_SECONDS

    def elapsed() -> int:
        return int((time.monotonic() - started) * 1000)

    try:
        target = resolve(url)
    except UnsafeTarget as exc:
        return Answer(None, elapsed(), "", f"refused: {exc}"[:255])
    key = _key(target)
    parts = urlsplit(url)
    path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    headers = {"User-Agent": USER_AGENT, **headers}
    conn = kept.take(key)
    while True:
        fresh = conn is None
        if conn is None:
            conn = _connection(key)
        try:
            _timeout(conn, deadline)
            conn.request("POST", path, body=body, headers=headers)
            response = conn.getresponse()
            status = response.status
            head = _read_head(response, conn, deadline)
        except _STALE as exc:
            conn.close()
            if not fresh:
                conn = None  # closed while idle: once more, on a new connection
                continue
            return Answer(None, elapsed(), "", _error(exc))
        except TimeoutError:
            conn.close()
            return Answer(None, elapsed(), "", "timeout")
        except (OSError, http.client.HTTPException, ValueError) as exc:
            conn.close()
            return Answer(None, elapsed(), "", _error(exc))
        break
    answer = Answer(status, elapsed(), head.decode("utf-8", errors="replace"), "")
    if response.isclosed() and not response.will_close:
        kept.give(key, conn)
    else:
        conn.close()
    return answer


def _key(target: Target) -> Key:
    return (target.scheme, target.host, target.port, target.addresses[0])


def _timeout(conn: http.client.HTTPConnection, deadline: float) -> None:
    """What is left of the send's 10 s, for each step that waits on the receiver."""
    left = deadline - time.monotonic()
    if left <= 0:
        raise TimeoutError
    conn.timeout = left
    if conn.sock is not None:
        conn.sock.settimeout(left)


def _read_head(
    response: http.client.HTTPResponse, conn: http.client.HTTPConnection, deadline: float
) -> bytes:
    """The first bytes of the answer. The rest is read and dropped, up to DRAIN_BYTES and
    while the deadline allows, so that the connection can be used again (it is closed
    otherwise: ``response.isclosed()`` stays false)."""
    head = b""
    drained = 0
    while not response.isclosed() and drained < DRAIN_BYTES:
        left = deadline - time.monotonic()
        if left <= 0:
            break
        if conn.sock is not None:
            conn.sock.settimeout(left)
        chunk = response.read1(8192)
        if not chunk:
            break
        if len(head) < RESPONSE_HEAD_BYTES:
            head += chunk[: RESPONSE_HEAD_BYTES - len(head)]
        drained += len(chunk)
    return head


def _error(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"[:255]
