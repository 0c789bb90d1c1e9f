"""Site-wide pages: health check, the error pages (problem+json under /api/), and the
documentation of each error code (where a problem's ``type`` points)."""

import json

from django.db import connection
from django.http import (
    Http404,
    HttpRequest,
    HttpResponse,
    HttpResponsePermanentRedirect,
    JsonResponse,
)
from django.shortcuts import render
from django.templatetags.static import static
from django.utils import translation
from django.views import defaults
from django.views.decorators.http import require_GET

from reseller.errors import problem_response
from reseller.middleware import is_api_path
from reseller.openapi_examples import problem_value
from reseller.problem_types import PROBLEM_TYPES


@require_GET
def healthz(request: HttpRequest) -> JsonResponse:
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
    return JsonResponse({"status": "ok"})


@require_GET
def favicon(request: HttpRequest) -> HttpResponsePermanentRedirect:
    """/favicon.ico, which browsers ask for on every page without an icon link (the admin's,
    a PDF, a raw JSON answer): the static file, under its hashed name."""
    return HttpResponsePermanentRedirect(static("favicon.ico"))


def bad_request(request: HttpRequest, exception: Exception) -> HttpResponse:
    """Django's own 400s (a Host outside ALLOWED_HOSTS, any SuspiciousOperation): raised before
    or outside the API's views, they never pass through ApiProblemMiddleware."""
    if is_api_path(request.path):
        return problem_response(request, status=400, code="bad_request")
    return defaults.bad_request(request, exception)


def permission_denied(request: HttpRequest, exception: Exception) -> HttpResponse:
    if is_api_path(request.path):
        return problem_response(request, status=403, code="permission_denied")
    return defaults.permission_denied(request, exception)


def page_not_found(request: HttpRequest, exception: Exception) -> HttpResponse:
    if is_api_path(request.path):
        return problem_response(request, status=404, code="not_found")
    return render(request, "404.html", status=404)


def server_error(request: HttpRequest) -> HttpResponse:
    if is_api_path(request.path):
        return problem_response(request, status=500, code="internal_error")
    return render(request, "500.html", status=500)


@require_GET
def error_codes(request: HttpRequest) -> HttpResponse:
    """Every error code, by status: what a problem's ``type`` links to."""
    codes = sorted(PROBLEM_TYPES.items(), key=lambda item: (item[1].statuses, item[0]))
    return render(request, "api_errors.html", {"codes": codes})


@require_GET
def error_code(request: HttpRequest, code: str) -> HttpResponse:
    """One error code: when it happens, what to do, and a body as the API sends it."""
    problem = PROBLEM_TYPES.get(code)
    if problem is None:
        raise Http404(code)
    with translation.override("en"):  # as the example says: Accept-Language: en
        example = json.dumps(problem_value(code), indent=2, ensure_ascii=False)
    return render(request, "api_error.html", {"code": code, "problem": problem, "example": example})
