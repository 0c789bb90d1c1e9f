"""A URLconf for the access tests: one probe view per permission and throttle, in front of the
project's own URLs (used with ``pytest.mark.urls("tests.probe_urls")``)."""

from __future__ import annotations

from django.urls import include, path
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts import permissions
from accounts.authentication import request_api_key, request_livemode, request_units_per_request
from accounts.permissions import B2BApiKeyRequired, StaffRequired, WebSessionRequired
from accounts.throttling import RECHARGE_THROTTLE_CLASSES


class Probe(APIView):
    def get(self, request):
        key = request_api_key(request)
        return Response(
            {
                "user": request.user.email,
                "key": key.prefix if key else None,
                "livemode": request_livemode(request),
                "units": request_units_per_request(request),
            }
        )

    post = get


def probe(*permissions, throttles=None):
    attrs = {"permission_classes": list(permissions)}
    if throttles is not None:
        attrs["throttle_classes"] = throttles
    return type("DeclaredProbe", (Probe,), attrs).as_view()


urlpatterns = [
    path("api/v1/probe/any", probe(IsAuthenticated)),
    path("api/v1/probe/web-only", probe(WebSessionRequired)),
    path("api/v1/probe/b2b", probe(B2BApiKeyRequired)),
    path("api/v1/probe/admin", probe(StaffRequired)),
    path("api/v1/probe/sandbox", probe(permissions.TestKeyRequired)),  # not a pytest "Test*" name
    path("api/v1/probe/recharge", probe(IsAuthenticated, throttles=RECHARGE_THROTTLE_CLASSES)),
    path("", include("reseller.urls")),
]
