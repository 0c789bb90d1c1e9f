"""``GET /metrics``: the Prometheus text format, for Prometheus only (docs/operations.md).

Who may read it: with ``METRICS_ALLOWED_IPS``, those addresses (or networks) only (403 for
the others); with ``METRICS_TOKEN``, callers that send ``Authorization: Bearer <token>`` (401
without it or with another); with neither, loopback callers only (a Prometheus on the same
host, or an operator's curl there). The address is ``reseller.net.client_ip`` (behind
TRUSTED_PROXIES, the client's, not the proxy's).
"""

from __future__ import annotations

import hmac
import ipaddress

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.utils.translation import gettext as _
from django.views.decorators.cache import never_cache
from django.views.decorators.csrf import csrf_exempt
from prometheus_client import generate_latest
from prometheus_client.exposition import CONTENT_TYPE_PLAIN_0_0_4

from metrics.collector import registry_for_scrape
from reseller.errors import problem_response
from reseller.net import client_ip


def _address_allowed(address: str) -> bool:
    allowed = settings.METRICS_ALLOWED_IPS
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return False
    if not allowed:
        return settings.METRICS_TOKEN != "" or ip.is_loopback
    for entry in allowed:
        try:
            if ip in ipaddress.ip_network(entry, strict=False):
                return True
        except ValueError:
            continue
    return False


def _bearer(request: HttpRequest) -> str | None:
    scheme, _space, token = request.headers.get("Authorization", "").partition(" ")
    return token.strip() if scheme.lower() == "bearer" and token.strip() else None


@csrf_exempt  # no cookie is read and nothing changes: a POST gets its 405, not CSRF's page
@never_cache
def metrics(request: HttpRequest) -> HttpResponse:
    if not settings.METRICS_ENABLED:
        return problem_response(request, status=404, code="not_found")
    if request.method not in ("GET", "HEAD"):
        return problem_response(
            request, status=405, code="method_not_allowed", headers={"Allow": "GET, HEAD"}
        )
    if not _address_allowed(client_ip(request)):
        return problem_response(
            request,
            status=403,
            code="ip_not_allowed",
            detail=_("Metrics are not served to this address."),
        )
    if settings.METRICS_TOKEN:
        given = _bearer(request)
        if given is None:
            return problem_response(
                request,
                status=401,
                code="not_authenticated",
                detail=_("Send the metrics token as Authorization: Bearer <token>."),
                headers={"WWW-Authenticate": 'Bearer realm="metrics"'},
            )
        if not hmac.compare_digest(given.encode(), settings.METRICS_TOKEN.encode()):
            return problem_response(
                request,
                status=401,
                code="token_invalid",
                detail=_("This is not the metrics token."),
                headers={"WWW-Authenticate": 'Bearer realm="metrics", error="invalid_token"'},
            )
    # The text format 0.0.4 that every Prometheus (and agent) reads; what generate_latest
    # writes for names like ours.
    body = generate_latest(registry_for_scrape())
    return HttpResponse(body, content_type=CONTENT_TYPE_PLAIN_0_0_4)
