"""Site-wide pages: health check, and the error pages (problem+json under /api/)."""

from django.db import connection
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from reseller.errors import problem_response
from reseller.middleware import is_api_path


@require_GET
def healthz(request: HttpRequest) -> JsonResponse:
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
    return JsonResponse({"status": "ok"})


def page_not_found(request: HttpRequest, exception: Exception) -> HttpResponse:
    if is_api_path(request.path):
        return problem_response(request, status=404, code="not_found")
    return render(request, "404.html", status=404)


def server_error(request: HttpRequest) -> HttpResponse:
    if is_api_path(request.path):
        return problem_response(request, status=500, code="internal_error")
    return render(request, "500.html", status=500)
