"""Views that fail on purpose, to check that failures under /api/ are problem details."""

from django.core.exceptions import PermissionDenied, SuspiciousOperation
from django.http import HttpResponse
from django.urls import include, path
from rest_framework.decorators import api_view, permission_classes
from rest_framework.permissions import AllowAny


@api_view(["GET"])
@permission_classes([AllowAny])
def drf_boom(request):
    raise RuntimeError("secret internals must not leak")


def django_boom(request):
    raise RuntimeError("secret internals must not leak")


def plain_suspicious(request):
    raise SuspiciousOperation("secret internals must not leak")


def plain_forbidden(request):
    raise PermissionDenied("secret internals must not leak")


def site_page(request):
    return HttpResponse("ok")


urlpatterns = [
    path("api/v1/boom", drf_boom),
    path("api/v1/plain-boom", django_boom),
    path("api/v1/plain-suspicious", plain_suspicious),
    path("api/v1/plain-forbidden", plain_forbidden),
    path("", include("reseller.urls")),
]
