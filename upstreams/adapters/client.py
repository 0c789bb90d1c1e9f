"""The providers' HTTP client: urllib3's connection pools, one set per process, shared by the
adapters of every provider row and by the processor's threads.

urllib3 rather than httpx, as for the webhook sender (``webhooks/client.py``). A worker
process runs 100 threads, and at 500 ms a call most of them wait on a provider at once.
Measured there (docs/performance.md, "2026-11-30"): httpx's shared pool cost 1.1-2.7 ms of CPU
a call, against urllib3's 0.6 ms. Its pool scans every connection for every waiting request,
and it can close a connection it has just handed to another thread (encode/httpcore#1110):
that call then fails, or hangs until its read timeout.

The adapters need two kinds of failure, and nothing more:

- ``Unreachable``: the request cannot have left: the URL, a header or the timeout cannot
  be used (checked before the call), or no connection was made (refused, timed out, no such
  name). Safe to send elsewhere.
- ``NoAnswer``: it may have reached the provider, and no answer was read (a read timeout, a
  connection dropped, a TLS failure: urllib3 does not say whether that came before the
  request left). A send is then settled by looking it up.

Retries and redirects are off; no proxy is read from the environment. A kept connection the
provider closed meanwhile is found closed before it is used again (urllib3 checks it), and one
idle for KEEP_IDLE_SECONDS or more is closed rather than used (``_Expiring``).
"""

from __future__ import annotations

import functools
import json as jsonlib
import re
import ssl
import time
from base64 import b64encode
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlencode

import certifi
import urllib3
from urllib3 import HTTPHeaderDict
from urllib3.exceptions import ConnectTimeoutError, LocationValueError, ReadTimeoutError
from urllib3.util import parse_url

CONNECT_TIMEOUT_SECONDS = 5.0
# Connections kept per provider host and process: the worker's threads (100 a process in
# docker-compose.yml) with room to spare. More calls at once still go (each on a connection
# of its own, closed after its answer): the provider's ceiling of calls in flight bounds them.
KEEP_PER_HOST = 200
# A kept connection idle this long is closed rather than used: under the 5 s of
# common front ends' keep-alive (Apache, Node) and of httpx's own expiry.
KEEP_IDLE_SECONDS = 4.0
USER_AGENT = "reseller-providers/1"


class ClientError(Exception):
    """A call that got no answer."""


class Unreachable(ClientError):
    """The request cannot have left: nothing reached the provider."""


class NoAnswer(ClientError):
    """The request may have reached the provider; no answer was read. ``timed_out``: the
    read timed out (rather than the connection failing)."""

    def __init__(self, message: str, *, timed_out: bool) -> None:
        super().__init__(message)
        self.timed_out = timed_out


class Response:
    """An answer, read whole."""

    __slots__ = ("content", "headers", "status_code")

    def __init__(self, status_code: int, headers: Mapping[str, str], content: bytes) -> None:
        self.status_code = status_code
        self.headers = headers  # case-insensitive (urllib3's HTTPHeaderDict)
        self.content = content

    def json(self, **options: Any) -> Any:
        """The body as JSON; ``ValueError`` when it is not (``options``: ``json.loads``')."""
        return jsonlib.loads(self.content, **options)

    @property
    def text(self) -> str:
        return self.content.decode("utf-8", errors="replace")

    @property
    def retry_after(self) -> float | None:
        """``Retry-After`` in seconds (a 429's), None when absent or not a number."""
        try:
            return float(self.headers.get("Retry-After", ""))
        except ValueError:
            return None


def _query_value(value: Any) -> str:
    """A query value as httpx and the providers' references write it (``true``, not ``True``)."""
    if value is True:
        return "true"
    if value is False:
        return "false"
    return "" if value is None else str(value)


def _query(params: Mapping[str, Any]) -> str:
    pairs = [
        (name, _query_value(item))
        for name, value in params.items()
        for item in (value if isinstance(value, list | tuple) else [value])
    ]
    return urlencode(pairs)


@functools.cache
def _tls() -> ssl.SSLContext:
    """Certificates checked against certifi's authorities, as the webhook sender does."""
    return ssl.create_default_context(cafile=certifi.where())


@functools.cache
def shared() -> Client:
    """The process's client (thread-safe): every adapter's, unless a test gives its own."""
    return Client()


class _Expiring:
    """A pool that closes a kept connection idle for KEEP_IDLE_SECONDS or more before using
    it again (httpx did the same after 5 s): a connection a NAT or a firewall dropped
    silently would take a whole read timeout to notice, a send then left unclear. A provider
    that closed it properly is noticed by urllib3 itself."""

    def __init__(self, *args: Any, idle_seconds: float = KEEP_IDLE_SECONDS, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.idle_seconds = idle_seconds

    def _get_conn(self, timeout: float | None = None) -> Any:
        conn = super()._get_conn(timeout)  # type: ignore[misc]
        idle_since = getattr(conn, "idle_since", None)
        if idle_since is not None and time.monotonic() - idle_since >= self.idle_seconds:
            conn.close()  # connected again when used
        return conn

    def _put_conn(self, conn: Any) -> None:
        if conn is not None:
            conn.idle_since = time.monotonic()
        super()._put_conn(conn)  # type: ignore[misc]


class _HTTPPool(_Expiring, urllib3.HTTPConnectionPool):
    pass


class _HTTPSPool(_Expiring, urllib3.HTTPSConnectionPool):
    pass


def _refused_before_sending(url: str, headers: Mapping[str, str], timeout: float) -> str | None:
    """Why this call cannot be made, checked before anything is sent; None when it can. What
    fails once the call has started is never taken for a request that did not leave."""
    if timeout <= 0:
        return "no time left for the call"
    try:
        parts = parse_url(url)
    except LocationValueError as exc:
        return f"cannot call {url!r}: {exc}"
    if parts.scheme not in ("http", "https") or not parts.host:
        return f"cannot call {url!r}: not an http(s) URL with a host"
    for name, value in headers.items():
        if not _TOKEN.fullmatch(name) or not _VALUE.fullmatch(value):
            return f"header {name!r} cannot be sent as it is written"
    return None


_TOKEN = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")  # a header name (RFC 9110)
_VALUE = re.compile(r"[\x20-\x7e\t]*")  # printable ASCII: no line break, nothing to encode


class Client:
    """Thread-safe: a connection is used by one call at a time and kept for the next."""

    def __init__(
        self, *, keep: int = KEEP_PER_HOST, idle_seconds: float = KEEP_IDLE_SECONDS
    ) -> None:
        self.pools = urllib3.PoolManager(
            num_pools=50,
            maxsize=keep,
            block=False,
            retries=False,
            ssl_context=_tls(),
        )
        # Each pool expires its idle connections (``_Expiring``). Not a pool keyword of the
        # manager's: those make the key a pool is found by, and it has no such field.
        expiring: dict[str, Any] = {
            "http": functools.partial(_HTTPPool, idle_seconds=idle_seconds),
            "https": functools.partial(_HTTPSPool, idle_seconds=idle_seconds),
        }
        self.pools.pool_classes_by_scheme = expiring

    def request(
        self,
        method: str,
        url: str,
        *,
        timeout: float,
        json: Any = None,
        content: str | bytes | None = None,
        params: Mapping[str, Any] | None = None,
        headers: Mapping[str, str] | None = None,
        auth: tuple[str, str] | None = None,
    ) -> Response:
        """One call within ``timeout`` seconds to read the answer (``CONNECT_TIMEOUT_SECONDS``
        at most to connect). ``json``: a body to encode; ``content``: one already encoded
        (its ``Content-Type`` in ``headers``); ``auth``: HTTP Basic credentials."""
        sent = HTTPHeaderDict({"Accept": "*/*", "User-Agent": USER_AGENT})
        sent.update(headers or {})
        body: bytes | None = None
        if json is not None:
            body = jsonlib.dumps(json, separators=(",", ":"), allow_nan=False).encode()
            sent.setdefault("Content-Type", "application/json")
        elif content is not None:
            body = content.encode() if isinstance(content, str) else content
        if auth is not None:  # UTF-8, as httpx and curl encode it (urllib3 would use Latin-1)
            sent["Authorization"] = "Basic " + b64encode(":".join(auth).encode()).decode()
        if params:
            url = f"{url}{'&' if '?' in url else '?'}{_query(params)}"
        refused = _refused_before_sending(url, sent, timeout)
        if refused is not None:
            raise Unreachable(refused)
        limits = urllib3.Timeout(connect=min(timeout, CONNECT_TIMEOUT_SECONDS), read=timeout)
        try:
            answer = self.pools.request(
                method, url, body=body, headers=sent, timeout=limits, redirect=False
            )
        except ConnectTimeoutError as exc:
            # Raised only while connecting, before the request is written: refused, no route,
            # no such name (NewConnectionError and NameResolutionError are ones), timed out.
            raise Unreachable(str(exc)) from exc
        except Exception as exc:
            # Anything else once the call has started, whatever urllib3 or http.client raise
            # (an answer too long to read raises OverflowError): it may have been received.
            raise NoAnswer(
                str(exc) or repr(exc), timed_out=isinstance(exc, ReadTimeoutError)
            ) from exc
        return Response(answer.status, answer.headers, answer.data)

    def get(self, url: str, **options: Any) -> Response:
        return self.request("GET", url, **options)

    def post(self, url: str, **options: Any) -> Response:
        return self.request("POST", url, **options)
