"""DRF permission classes for the access rules of docs/contract.md sections 2 and 3.

Each also requires an authenticated caller: without credentials DRF answers 401
``not_authenticated``. The refusals are 403 problems with the codes below (docs/access.md).
"""

from __future__ import annotations

from django.conf import settings
from django.utils.translation import gettext as _
from rest_framework.permissions import BasePermission
from rest_framework.request import Request
from rest_framework_simplejwt.tokens import Token

from accounts.authentication import request_api_key
from accounts.errors import (
    ApiKeyRequiredError,
    B2BNotEnabled,
    TestKeyRequiredError,
    WebSessionRequiredError,
)
from reseller.errors import PermissionDenied


class _AuthenticatedRule(BasePermission):
    """Returns False for anonymous callers (DRF turns that into 401) and else runs ``check``."""

    def has_permission(self, request: Request, view) -> bool:
        if not (request.user and request.user.is_authenticated):
            return False
        self.check(request)
        return True

    def check(self, request: Request) -> None:  # pragma: no cover - overridden
        raise NotImplementedError


class WebSessionRequired(_AuthenticatedRule):
    """Web-only endpoints (card checkout): a JWT or the site session; keys get 403
    ``web_session_required``."""

    def check(self, request: Request) -> None:
        if request_api_key(request) is not None:
            raise WebSessionRequiredError()


class B2BApiKeyRequired(_AuthenticatedRule):
    """The B2B API: a key (live or test) of a B2B account. Without a key 403
    ``api_key_required``; a key of an account not tagged B2B 403 ``b2b_not_enabled``."""

    def check(self, request: Request) -> None:
        key = request_api_key(request)
        if key is None:
            raise ApiKeyRequiredError()
        if not key.account.is_b2b:
            raise B2BNotEnabled()


class LiveProfileWrite(_AuthenticatedRule):
    """Reads for any caller; a change of the (live) profile refused to a test key, 403
    ``permission_denied``: test keys act on test data only. A permission, so the refusal is
    decided before the throttles and uses no quota (contract section 7)."""

    def check(self, request: Request) -> None:
        if request.method in ("GET", "HEAD", "OPTIONS"):
            return
        key = request_api_key(request)
        if key is not None and not key.livemode:
            raise PermissionDenied(_("A test key cannot change the live profile."))


class StaffRequired(_AuthenticatedRule):
    """Back-office endpoints: a staff user by key, JWT or session; else 403
    ``permission_denied``."""

    def check(self, request: Request) -> None:
        if not request.user.is_staff:
            raise PermissionDenied()
        key = request_api_key(request)
        if key is not None:
            if not key.livemode:  # test keys see test data only, everywhere
                raise PermissionDenied(
                    _("A test key cannot use the back office: it shows live data.")
                )
            if settings.STAFF_KEYS_REQUIRE_WHITELIST and not key.ip_whitelist:
                raise PermissionDenied(
                    _("Staff keys need an IP whitelist here (STAFF_KEYS_REQUIRE_WHITELIST).")
                )
        elif isinstance(request.auth, Token):
            if request.auth.get("otp") is not True:
                raise PermissionDenied(_("Log in again with your second factor."))
        elif not getattr(request.user, "is_verified", lambda: False)():
            raise PermissionDenied(_("Log in to the back office with your second factor."))


class TestKeyRequired(_AuthenticatedRule):
    """The sandbox: a test key only; live keys and web sessions get 403 ``test_key_required``."""

    def check(self, request: Request) -> None:
        key = request_api_key(request)
        if key is None or key.livemode:
            raise TestKeyRequiredError()
