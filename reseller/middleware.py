"""Request ids on every response and log line; problem details for every error under /api/."""

from __future__ import annotations

import functools
import logging
import re
import uuid
import zoneinfo

from django.core.exceptions import PermissionDenied, SuspiciousOperation
from django.http import (
    HttpRequest,
    HttpResponse,
    HttpResponseBadRequest,
    HttpResponseNotFound,
)
from django.utils import timezone
from django.utils.translation import gettext as _

from reseller.errors import PROBLEM_CONTENT_TYPE, STATUS_CODES, problem_response
from reseller.logs import request_id_reset, request_id_set

logger = logging.getLogger(__name__)

# A caller's id is echoed only if it is short and printable, so it cannot forge log lines.
_SAFE_REQUEST_ID = re.compile(r"^[A-Za-z0-9._:\-]{1,128}$")


class RequestIdMiddleware:
    """Echo the caller's X-Request-Id or make one; expose it to views, logs and the response."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        given = request.headers.get("X-Request-Id", "")
        request_id = given if _SAFE_REQUEST_ID.match(given) else f"req_{uuid.uuid4().hex}"
        request.request_id = request_id  # type: ignore[attr-defined]
        token = request_id_set(request_id)
        try:
            response = self.get_response(request)
        finally:
            request_id_reset(token)
        response["X-Request-Id"] = request_id
        return response


def is_api_path(path: str) -> bool:
    return path.startswith("/api/")


class NulByteMiddleware:
    """No path or query string with a NUL byte reaches a view: no id or filter of ours holds
    one, and PostgreSQL refuses it in text (a DataError, i.e. a 500, deep inside a view). A NUL
    in the path is a 404, in the query string a 400 (docs/security.md, "Limits")."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        query = request.META.get("QUERY_STRING", "")
        in_path = "\x00" in request.path
        if not in_path and "%00" not in query and "\x00" not in query:
            return self.get_response(request)
        if not is_api_path(request.path):
            return HttpResponseNotFound() if in_path else HttpResponseBadRequest()
        if in_path:
            return problem_response(request, status=404, code="not_found")
        return problem_response(
            request,
            status=400,
            code="validation_error",
            detail=_("A query parameter holds a NUL byte."),
        )


class ApiProblemMiddleware:
    """Under /api/, no error ever leaves as HTML: Django's own 404/405/500 become problem+json."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if not is_api_path(request.path) or response.status_code < 400:
            return response
        content_type = response.get("Content-Type", "")
        if content_type.startswith(PROBLEM_CONTENT_TYPE):
            return response
        status = response.status_code
        headers = {}
        if status == 405 and response.has_header("Allow"):
            headers["Allow"] = response["Allow"]
        detail = {
            404: _("No such resource. Check the path and the API version (/api/v1)."),
            405: _("This method is not allowed here."),
            500: _("Something went wrong on our side. Nothing was charged twice; retry later."),
        }.get(status, "")
        return problem_response(
            request,
            status=status,
            code=STATUS_CODES.get(status, "error"),
            detail=detail,
            headers=headers,
        )

    def process_exception(self, request: HttpRequest, exception: Exception):
        if not is_api_path(request.path):
            return None
        from django.http import Http404

        if isinstance(exception, Http404):
            return problem_response(request, status=404, code="not_found")
        if isinstance(exception, PermissionDenied | SuspiciousOperation):
            # Django answers them 403 / 400 (handler403 / handler400), and __call__ turns an
            # answer that is not problem+json into one: not a 500.
            return None
        logger.exception("unhandled error under /api/", exc_info=exception)
        return problem_response(
            request,
            status=500,
            code="internal_error",
            detail=_("Something went wrong on our side. Nothing was charged twice; retry later."),
        )


TIME_ZONE_COOKIE = "tz"


@functools.cache
def _zone(name: str) -> zoneinfo.ZoneInfo | None:
    try:
        return zoneinfo.ZoneInfo(name)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        return None


class TimeZoneMiddleware:
    """Site pages show times in the visitor's time zone: the IANA name their browser reports
    (reseller/static/js/timezone.js keeps it in the ``tz`` cookie); UTC until it is known. The API
    always answers in UTC (docs/contract.md §1)."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        name = request.COOKIES.get(TIME_ZONE_COOKIE, "")
        zone = _zone(name) if name and len(name) <= 64 and not is_api_path(request.path) else None
        if zone is None:
            timezone.deactivate()
            return self.get_response(request)
        timezone.activate(zone)
        try:
            return self.get_response(request)
        finally:
            timezone.deactivate()
