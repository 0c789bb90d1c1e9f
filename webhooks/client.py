"""POSTing a delivery to a receiver: at the address the SSRF check resolved, over a kept
connection (urllib3's connection pools).

Every send resolves the URL again and checks every address (``targets.resolve``); the
request then goes to the first checked address, never to a second DNS answer: the pool's
host *is* that address, with the URL's host in the ``Host`` header and, over TLS, as the SNI
name (``server_hostname``) and the name the certificate must match (``assert_hostname``).
Retries and redirects are off, and a pool reads no proxy from the environment.

One pool per scheme, host, port and address keeps the connections of a completed answer for
the next send: a drain sends its endpoint's deliveries one after the other, so a busy
endpoint costs one TCP (and TLS) handshake per drain instead of one per event. A kept
connection the receiver has closed meanwhile fails before any answer; the request is then
sent once more on a new one (a receiver may so see an event twice, which at-least-once
delivery allows).

urllib3 rather than httpx here: it is the thin layer over ``http.client`` that httpx is not,
and the delivery worker spends its CPU beside the processor on the same machine
(docs/performance.md).
"""

from __future__ import annotations

import functools
import ssl
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from urllib.parse import urlsplit

import urllib3
from django.conf import settings
from urllib3.exceptions import (
    HTTPError,
    NewConnectionError,
    ProtocolError,
    SSLError,
)
from urllib3.exceptions import TimeoutError as UrllibTimeout
from urllib3.util.ssl_match_hostname import CertificateError

from webhooks.targets import Target, UnsafeTarget, resolve

RESPONSE_HEAD_BYTES = 500
USER_AGENT = "reseller-webhooks/1"
CONNECT_TIMEOUT_SECONDS = 5.0
# Read past the head so that the connection can be used again; a longer answer closes it.
DRAIN_BYTES = 64 * 1024
KEEP_IDLE_SECONDS = 30.0  # under the keep-alive timeout of common servers' defaults (60-75 s)
KEEP_PER_TARGET = 4
KEEP_TARGETS = 64


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
Pool = urllib3.HTTPConnectionPool  # HTTPSConnectionPool is one


@functools.cache
def _tls() -> ssl.SSLContext:
    """Certificates checked against certifi's authorities, as httpx and requests do."""
    import certifi

    return ssl.create_default_context(cafile=settings.WEBHOOK_CA_FILE or certifi.where())


def _host_header(scheme: str, host: str, port: int) -> str:
    """The URL's host as ``http.client`` writes it: IDNA, IPv6 in brackets, the port unless
    it is the scheme's default."""
    name = _ascii(host)
    if ":" in name:
        name = f"[{name}]"
    default = 443 if scheme == "https" else 80
    return name if port == default else f"{name}:{port}"


def _ascii(host: str) -> str:
    return host if host.isascii() else host.encode("idna").decode("ascii")


def _pool(key: Key) -> Pool:
    scheme, host, port, address = key
    headers = {"Host": _host_header(scheme, host, port), "User-Agent": USER_AGENT}
    timeout = urllib3.Timeout(
        connect=CONNECT_TIMEOUT_SECONDS, read=settings.WEBHOOK_TIMEOUT_SECONDS
    )
    # The checked address is the pool's host, never the host's name: no second DNS answer.
    if scheme == "https":
        name = _ascii(host)
        return urllib3.HTTPSConnectionPool(
            address,
            port,
            timeout=timeout,
            maxsize=KEEP_PER_TARGET,
            headers=headers,
            retries=False,
            ssl_context=_tls(),
            server_hostname=name,
            assert_hostname=name,
        )
    return urllib3.HTTPConnectionPool(
        address, port, timeout=timeout, maxsize=KEEP_PER_TARGET, headers=headers, retries=False
    )


def _idle(pool: Pool) -> int:
    """How many of the pool's kept connections are open (urllib3 keeps closed ones too)."""
    queue = pool.pool
    if queue is None:
        return 0
    return sum(1 for conn in list(queue.queue) if conn is not None and conn.is_connected)


class _Kept:
    """Pools by target, shared by a process's threads (a connection is used by one at once).

    A pool unused for KEEP_IDLE_SECONDS is closed rather than used again, and at most
    KEEP_TARGETS pools are kept (the least recently used idle one goes first)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.pools: dict[Key, tuple[float, Pool]] = {}  # in the order of their last use
        self.users: dict[Key, int] = {}

    @contextmanager
    def pool(self, key: Key) -> Iterator[Pool]:
        closing: list[Pool] = []
        with self.lock:
            now = time.monotonic()
            for other, (since, pool) in list(self.pools.items()):
                if now - since >= KEEP_IDLE_SECONDS and not self.users.get(other):
                    del self.pools[other]
                    closing.append(pool)
            found = self.pools.pop(key, None)
            pool = found[1] if found is not None else _pool(key)
            self.pools[key] = (now, pool)
            self.users[key] = self.users.get(key, 0) + 1
            idle = [k for k in self.pools if not self.users.get(k)]
            while len(self.pools) > KEEP_TARGETS and idle:
                closing.append(self.pools.pop(idle.pop(0))[1])
        for old in closing:
            old.close()
        try:
            yield pool
        finally:
            with self.lock:
                self.users[key] -= 1
                if not self.users[key]:
                    del self.users[key]
                if key in self.pools:
                    self.pools[key] = (time.monotonic(), pool)

    def idle_connections(self) -> int:
        with self.lock:
            pools = [pool for _since, pool in self.pools.values()]
        return sum(_idle(pool) for pool in pools)

    def close_all(self) -> None:
        with self.lock:
            pools, self.pools = self.pools, {}
        for _since, pool in pools.values():
            pool.close()


kept = _Kept()


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
    parts = urlsplit(url)
    path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    with kept.pool(_key(target)) as pool:
        headers = {**pool.headers, **headers}
        again = True
        while True:
            reused = again and _idle(pool) > 0
            try:
                status, head = _exchange(pool, path, body, headers, deadline)
            except (ProtocolError, SSLError) as exc:
                if reused and isinstance(_cause(exc), _STALE):
                    again = False  # closed while idle: once more, on a new connection
                    continue
                return Answer(None, elapsed(), "", _error(exc))
            except (UrllibTimeout, TimeoutError) as exc:
                if isinstance(exc, NewConnectionError):
                    return Answer(None, elapsed(), "", _error(exc))
                return Answer(None, elapsed(), "", "timeout")
            except (HTTPError, OSError, ValueError) as exc:
                return Answer(None, elapsed(), "", _error(exc))
            return Answer(status, elapsed(), head.decode("utf-8", errors="replace"), "")


# Raised by a kept connection the receiver closed while it was idle: worth one more try.
_STALE = (ConnectionResetError, BrokenPipeError, ssl.SSLEOFError)


def _key(target: Target) -> Key:
    return (target.scheme, target.host, target.port, target.addresses[0])


def _left(deadline: float) -> float:
    """What is left of the send's 10 s, for each step that waits on the receiver."""
    left = deadline - time.monotonic()
    if left <= 0:
        raise TimeoutError
    return left


def _exchange(
    pool: Pool, path: str, body: bytes, headers: dict[str, str], deadline: float
) -> tuple[int, bytes]:
    left = _left(deadline)
    response = pool.urlopen(
        "POST",
        path,
        body=body,
        headers=headers,
        retries=False,
        redirect=False,
        assert_same_host=False,
        timeout=urllib3.Timeout(connect=min(left, CONNECT_TIMEOUT_SECONDS), read=left),
        preload_content=False,
        decode_content=False,
    )
    try:
        return response.status, _read_head(response, deadline)
    finally:
        response.release_conn()


def _read_head(response: urllib3.BaseHTTPResponse, deadline: float) -> bytes:
    """The first bytes of the answer. The rest is read and dropped, up to DRAIN_BYTES and
    while the deadline allows, so that the connection can be used again (urllib3 gives it
    back to the pool once the answer is read to its end; it is closed otherwise)."""
    head = b""
    drained = 0
    complete = False
    while drained < DRAIN_BYTES:
        left = deadline - time.monotonic()
        if left <= 0:
            break
        sock = getattr(response.connection, "sock", None)
        if sock is not None:
            sock.settimeout(left)
        chunk = response.read1(8192, decode_content=False)
        if not chunk:
            complete = True
            break
        if len(head) < RESPONSE_HEAD_BYTES:
            head += chunk[: RESPONSE_HEAD_BYTES - len(head)]
        drained += len(chunk)
    if not complete:
        response.close()  # the unread rest: this connection is not used again
    return head


def _cause(exc: BaseException) -> BaseException:
    """The error under urllib3's wrappers (``ProtocolError("Connection aborted.", error)``,
    ``SSLError(error)``, ``NewConnectionError(...) from error``)."""
    while isinstance(exc, HTTPError):
        inner = exc.__cause__ or next(
            (arg for arg in reversed(exc.args) if isinstance(arg, BaseException)), None
        )
        if inner is None:
            break
        exc = inner
    return exc


def _error(exc: BaseException) -> str:
    cause = _cause(exc)
    if isinstance(cause, CertificateError):
        # urllib3 matches the name itself (``assert_hostname``): the same refusal as
        # OpenSSL's, said in its words so that the dashboard shows one kind of message.
        return f"CertificateError: CERTIFICATE_VERIFY_FAILED: {cause}"[:255]
    return f"{type(cause).__name__}: {cause}"[:255]
