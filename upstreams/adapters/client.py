"""The providers' HTTP client: urllib3's connection pools, one set per process, shared by the
adapters of every provider row and by the processor's threads.

urllib3 rather than httpx, as for the webhook sender (``webhooks/client.py``). A worker
process runs 100 threads, and at 500 ms a call most of them wait on a provider at once.
Measured there (docs/performance.md, "2026-11-30"): httpx's shared pool cost 1.1-2.7 ms of CPU
a call, against urllib3's 0.6 ms. Its pool scans every connection for every waiting request,
and it can close a connection it has just handed to another thread (encode/httpcore#1110):
that call then fails, or hangs until its read timeout.

The adapters need two kinds of failure, and nothing more:

- ``Unreachable``: the request cannot have left (the connection was refused or timed out,
  the name did not resolve, the URL or a header cannot be sent). Safe to send elsewhere.
- ``NoAnswer``: it may have reached the provider, and no answer was read (a read timeout, a
  connection dropped, a TLS failure: urllib3 does not say whether that came before the
  request left). A send is then settled by looking it up.

Retries and redirects are off; no proxy is read from the environment; a kept connection the
provider closed meanwhile is found closed before it is used again (urllib3 checks it).
"""

from __future__ import annotations

import functools
import json as jsonlib
import ssl
from base64 import b64encode
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlencode

import certifi
import urllib3
from urllib3.exceptions import ConnectTimeoutError, HTTPError, ReadTimeoutError

CONNECT_TIMEOUT_SECONDS = 5.0
# Connections kept per provider host and process: the worker's threads (100 a process in
# docker-compose.yml) with room to spare. More calls at once still go (each on a connection
# of its own, closed after its answer): the provider's ceiling of calls in flight bounds them.
KEEP_PER_HOST = 200


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


class Client:
    """Thread-safe: a connection is used by one call at a time and kept for the next."""

    def __init__(self, *, keep: int = KEEP_PER_HOST) -> None:
        self.pools = urllib3.PoolManager(
            num_pools=50, maxsize=keep, block=False, retries=False, ssl_context=_tls()
        )

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
        sent = dict(headers or {})
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
        limits = urllib3.Timeout(connect=min(timeout, CONNECT_TIMEOUT_SECONDS), read=timeout)
        try:
            answer = self.pools.request(
                method, url, body=body, headers=sent, timeout=limits, redirect=False
            )
        except (ConnectTimeoutError, ValueError) as exc:
            # NewConnectionError (refused, no route, no such name) is a ConnectTimeoutError;
            # a URL or a header that cannot be sent (LocationValueError, http.client's
            # "Invalid header value", a header beyond Latin-1) is refused before anything left.
            raise Unreachable(str(exc) or repr(exc)) from exc
        except HTTPError as exc:
            raise NoAnswer(str(exc), timed_out=isinstance(exc, ReadTimeoutError)) from exc
        return Response(answer.status, answer.headers, answer.data)

    def get(self, url: str, **options: Any) -> Response:
        return self.request("GET", url, **options)

    def post(self, url: str, **options: Any) -> Response:
        return self.request("POST", url, **options)
