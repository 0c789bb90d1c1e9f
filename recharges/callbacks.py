"""Providers' callbacks (docs/providers.md; contract §14): ``POST /webhooks/providers/<name>``.

DT One posts a transaction to the ``callback_url`` we send with each top-up. A callback is
never trusted: it only names a recharge whose fate is then looked up at that provider by the
processor (a task that takes the dispatched row over and asks the provider by our reference).
So a forged or replayed callback costs at most one look-up. With
``PROVIDER_CALLBACK_ALLOWED_IPS`` set (the provider's published ranges), other addresses get
403. Unknown providers and providers without callbacks get 404; a body the provider's client
cannot read gets 400. A callback for a delivered recharge asks whether the provider took it
back (``recharges.reversals``).
"""

from __future__ import annotations

import base64
import hmac
import ipaddress
import json
import logging
import time

from django.conf import settings
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_POST

from recharges.models import Recharge
from recharges.tasks import recharge_process_task, recharge_reversal_check_task
from reseller.errors import problem_body
from reseller.net import client_ip
from reseller.tasks import enqueue
from upstreams.adapters import adapter_for
from upstreams.models import Provider

logger = logging.getLogger(__name__)


def _problem(status: int, code: str, detail: str) -> JsonResponse:
    body = problem_body(status=status, code=code, title=code, detail=detail, request_id=None)
    return JsonResponse(body, status=status, content_type="application/problem+json")


def _allowed(address: str) -> bool:
    """Is ``address`` in PROVIDER_CALLBACK_ALLOWED_IPS (any address when it is empty)?"""
    allowed = settings.PROVIDER_CALLBACK_ALLOWED_IPS
    if not allowed:
        return True
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return False
    for entry in allowed:
        try:
            if ip in ipaddress.ip_network(entry.strip(), strict=False):
                return True
        except ValueError:
            logger.warning("PROVIDER_CALLBACK_ALLOWED_IPS: %r is not an address or network", entry)
    return False


def _credentials_match(request: HttpRequest, provider: Provider) -> bool:
    """Did the callback come with the HTTP Basic credentials of the URL we sent
    (``processor.callback_url``)? Compared in constant time."""
    scheme, _, encoded = request.META.get("HTTP_AUTHORIZATION", "").partition(" ")
    if scheme.lower() != "basic":
        return False
    try:
        user, _, password = base64.b64decode(encoded, validate=True).decode().partition(":")
    except (ValueError, UnicodeDecodeError):
        return False
    return hmac.compare_digest(user.encode(), provider.name.encode()) & hmac.compare_digest(
        password.encode(), provider.callback_secret.encode()
    )


@csrf_exempt
@require_POST
def provider_callback(request: HttpRequest, name: str) -> HttpResponse:
    if not _allowed(client_ip(request)):
        return _problem(403, "forbidden", "Callbacks are not accepted from this address.")
    provider = Provider.objects.filter(name=name).first()
    parse = getattr(adapter_for(provider), "callback_result", None) if provider else None
    if provider is None or parse is None:
        return _problem(404, "not_found", "No provider with callbacks has this name.")
    if provider.callback_secret and not _credentials_match(request, provider):
        response = _problem(401, "not_authenticated", "This callback lacks its credentials.")
        response["WWW-Authenticate"] = 'Basic realm="provider callbacks"'
        return response
    try:
        parsed = parse(json.loads(request.body or b"null"))
    except (ValueError, TypeError, AttributeError):
        parsed = None
    if not parsed:
        return _problem(400, "invalid_callback", "The body is not a transaction of this provider.")
    reference = parsed[0]
    found = (
        Recharge.objects.filter(
            public_id=reference,
            provider=name,
            livemode=True,
            status__in=(Recharge.Status.DISPATCHED, Recharge.Status.DELIVERED),
        )
        .values_list("pk", "status")
        .first()
    )
    if found is not None:
        recharge_id, status = found
        try:
            if status == Recharge.Status.DISPATCHED:
                # Take the row over now and look it up at the provider (processor, step 1-2).
                enqueue(recharge_process_task, recharge_id, None, time.time())
            else:
                # Delivered: the provider may have taken it back; ask it (never trust this).
                # "callback", not the provider's name: the note is in the reseller's history.
                enqueue(recharge_reversal_check_task, recharge_id, "callback")
        except Exception:  # broker down: the sweeper (or the reconciliation) looks it up later
            logger.warning("callback for %s not enqueued", reference, exc_info=True)
    return HttpResponse(status=204)
