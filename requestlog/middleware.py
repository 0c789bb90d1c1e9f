"""Captures each request an API key makes for its request log (docs/request-log.md).

Under ``/api/`` with an ``x-api-key`` header, it reads the body before the view (DRF would
otherwise consume the stream) and, once the answer exists, hands plain values to the buffer
if DRF authenticated the request with a key: no database, no redaction, no parsing on the
request's path. A key refused after its secret was proved (revoked, or outside its IP
whitelist) is logged too, without its request body and at most ``REFUSED_PER_MINUTE`` of its
refusals a minute: refusals use no rate-limit quota, so without the cap a leaked revoked key
could fill its account's log.
Web sessions (JWT or the site's cookie) and unknown or malformed keys are not logged.
"""

from __future__ import annotations

import logging
import time

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.http import HttpRequest, HttpResponse, UnreadablePostError
from django.http.request import RawPostDataException

from accounts.authentication import refused_api_key, request_api_key
from requestlog.buffer import buffer
from requestlog.services import CAPTURE_LIMIT, Capture
from reseller import ratelimit
from reseller.middleware import is_api_path

logger = logging.getLogger(__name__)

REFUSED_PER_MINUTE = 10


class RequestLogMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if (
            "HTTP_X_API_KEY" not in request.META
            or not is_api_path(request.path)
            or not settings.REQUEST_LOG_ENABLED
        ):
            return self.get_response(request)
        created = time.time()
        started = time.perf_counter()
        try:
            body = request.body
        except (RequestDataTooBig, RawPostDataException, UnreadablePostError):
            body = b""  # the view answers 413 (or 400) itself
        response = self.get_response(request)
        latency_ms = round((time.perf_counter() - started) * 1000)
        try:
            self.capture(request, response, body, created=created, latency_ms=latency_ms)
        except Exception:  # the log never breaks a request
            logger.exception("request log: capture failed")
        return response

    def capture(
        self,
        request: HttpRequest,
        response: HttpResponse,
        body: bytes,
        *,
        created: float,
        latency_ms: int,
    ) -> None:
        key = request_api_key(request)  # type: ignore[arg-type]  # DRF copies auth here
        refused = key is None
        if key is None:
            key = refused_api_key(request)
            if key is None or not _refusal_logged(key.pk):
                return
        meta = request.META
        if response.streaming:
            response_head: bytes | None = None
            response_bytes = _length(response.get("Content-Length"))
        else:
            content = response.content
            response_head, response_bytes = content[:CAPTURE_LIMIT], len(content)
        buffer.add(
            Capture(
                created=created,
                account_id=key.account_id,
                api_key_id=key.pk,
                livemode=key.livemode,
                method=request.method or "",
                path=request.path,
                query=meta.get("QUERY_STRING", ""),
                status=response.status_code,
                latency_ms=latency_ms,
                request_id=getattr(request, "request_id", ""),
                idempotency_key=meta.get("HTTP_IDEMPOTENCY_KEY", ""),
                request_head=b"" if refused else body[:CAPTURE_LIMIT],
                request_bytes=len(body) or _length(meta.get("CONTENT_LENGTH")),
                request_type=meta.get("CONTENT_TYPE", ""),
                response_head=response_head,
                response_bytes=response_bytes,
                response_type=response.get("Content-Type", ""),
            ),
            background="SERVER_SOFTWARE" in meta,
        )


def _refusal_logged(key_id: int) -> bool:
    """Whether this refusal of the key fits in its per-minute share of the log (not when the
    count cannot be kept: Redis down)."""
    try:
        decision = ratelimit.hit(
            "requestlog-refused", str(key_id), limit=REFUSED_PER_MINUTE, window=60
        )
    except Exception:
        return False
    return decision.allowed


def _length(value: str | None) -> int:
    try:
        return max(0, int(value or 0))
    except ValueError:
        return 0
