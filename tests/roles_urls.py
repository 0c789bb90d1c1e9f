"""A URLconf for the fail-closed role test: a page and an API call nobody classified in
accounts/roles.py, in front of the project's own URLs (used with
``pytest.mark.urls("tests.roles_urls")``)."""

from __future__ import annotations

from django.http import HttpResponse, JsonResponse
from django.urls import include, path


def unclassified_page(request):
    return HttpResponse("unclassified page")


def unclassified_api(request):
    return JsonResponse({"ok": True})


urlpatterns = [
    path("unclassified/", unclassified_page, name="unclassified-page"),
    path("api/v1/unclassified", unclassified_api, name="unclassified-api"),
    path("", include("reseller.urls")),
]
