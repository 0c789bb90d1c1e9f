"""Site-wide pages: health check, and the error pages (problem+json under /api/)."""

from django.db import connection
from django.http import HttpRequest, HttpResponse, HttpResponsePermanentRedirect, JsonResponse
from django.shortcuts import render
from django.templatetags.static import static
from django.views.decorators.http import require_GET

from reseller.errors import problem_response
from reseller.middleware import is_api_path


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


def page_not_found(request: HttpRequest, exception: Exception) -> HttpResponse:
    if is_api_path(request.path):
        return problem_response(request, status=404, code="not_found")
    return render(request, "404.html", status=404)


def server_error(request: HttpRequest) -> HttpResponse:
    if is_api_path(request.path):
        return problem_response(request, status=500, code="internal_error")
    return render(request, "500.html", status=500)
