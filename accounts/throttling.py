"""Per-key rate limits on reseller.ratelimit (Redis, atomic, shared by every process).

DRF runs throttles after authentication and permissions, so a request refused with 401 or 403
there never uses quota; a 403 the view decides itself, after the throttles, gives its hits
back (``reseller.errors.exception_handler``, through ``request.rate_limit_hits``). A refused
request is 429 ``rate_limited`` with ``Retry-After``; every counted response carries
``RateLimit`` and ``RateLimit-Policy`` (the tightest limit that applied). See docs/access.md.
"""

from __future__ import annotations

from django.conf import settings
from django.utils.translation import gettext as _
from rest_framework.request import Request
from rest_framework.throttling import BaseThrottle

from accounts.authentication import request_api_key
from accounts.models import ApiKey
from reseller import ratelimit
from reseller.errors import RateLimited

WINDOW_SECONDS = 60
_SAFE_METHODS = ("GET", "HEAD", "OPTIONS")


def _count(request: Request, view, *, scope: str, key: ApiKey, limit: int) -> None:
    decision = ratelimit.hit(scope, key.public_id, limit=limit, window=WINDOW_SECONDS)
    request.rate_limit_hits = [*getattr(request, "rate_limit_hits", ()), decision]  # type: ignore[attr-defined]
    tightest = getattr(request, "_rate_limit_decision", None)
    if tightest is None or decision.remaining < tightest.remaining or not decision.allowed:
        request._rate_limit_decision = decision  # type: ignore[attr-defined]
        view.headers.update(decision.headers())  # DRF adds these to the response, even errors
    if not decision.allowed:
        raise RateLimited(
            _("Too many requests for this API key. Retry after %(seconds)d seconds.")
            % {"seconds": decision.reset},
            retry_after=decision.reset,
            headers=decision.headers(),
        )


class ApiKeyRateThrottle(BaseThrottle):
    """Every request made with a key: ``key.requests_per_minute`` (default
    API_KEY_RATE_LIMIT_PER_MINUTE = 600, or the key's override set by staff). A default
    throttle class, so every view has it unless it replaces throttle_classes."""

    scope = "api-key"

    def allow_request(self, request: Request, view) -> bool:
        key = request_api_key(request)
        if key is not None:
            _count(request, view, scope=self.scope, key=key, limit=key.requests_per_minute)
        return True


class TestRechargeThrottle(BaseThrottle):
    """Recharge requests of a test key: TEST_KEY_RECHARGES_PER_MINUTE (10) per key. Declared
    by recharge endpoints; counts unsafe methods only, and ignores live keys and web sessions."""

    scope = "test-recharge"

    def allow_request(self, request: Request, view) -> bool:
        key = request_api_key(request)
        if key is not None and not key.livemode and request.method not in _SAFE_METHODS:
            _count(
                request,
                view,
                scope=self.scope,
                key=key,
                limit=settings.TEST_KEY_RECHARGES_PER_MINUTE,
            )
        return True


# What a recharge endpoint declares: the per-key limit and the test-key recharge limit.
RECHARGE_THROTTLE_CLASSES = [ApiKeyRateThrottle, TestRechargeThrottle]
