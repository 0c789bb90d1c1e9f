"""``x-api-key`` authentication for DRF, and the helpers views use to read the credential.

See docs/access.md for how other apps declare these pieces.
"""

from __future__ import annotations

from django.conf import settings
from rest_framework.authentication import BaseAuthentication
from rest_framework.request import Request
from rest_framework_simplejwt.authentication import JWTAuthentication
from rest_framework_simplejwt.exceptions import AuthenticationFailed, InvalidToken
from rest_framework_simplejwt.settings import api_settings as jwt_settings
from rest_framework_simplejwt.tokens import Token
from rest_framework_simplejwt.utils import get_md5_hash_password

from accounts import roles, services
from accounts.errors import (
    AccountSuspended,
    AmbiguousCredentials,
    CredentialRefused,
    IpNotAllowed,
)
from accounts.models import ApiKey, User
from accounts.selectors import api_key_verify
from accounts.suspension import account_suspended, ancestors_path
from reseller.errors import PermissionDenied
from reseller.net import client_ip

API_KEY_HEADER = "x-api-key"


class ApiKeyAuthentication(BaseAuthentication):
    """Authenticates ``x-api-key: rsl_live_…|rsl_test_…``; ``request.auth`` is the ApiKey.

    - no header: not this class's business (JWT or the site session may follow);
    - a key together with an ``Authorization`` header: 400 ``ambiguous_credentials``;
    - malformed, unknown or wrong key: 401 ``invalid_api_key``; revoked: 401 ``api_key_revoked``;
    - client address (reseller.net.client_ip) outside a non-empty whitelist: 403 ``ip_not_allowed``;
    - the key's account, or an ancestor of it in a network, suspended: 403 ``account_suspended``
      (read with the key's row: no query of its own);
    - a live key on a route its creator's role may not use (accounts/roles.py): 403
      ``permission_denied``.

    Listed first in DEFAULT_AUTHENTICATION_CLASSES: DRF takes the WWW-Authenticate challenge
    of the first class, and without one it would turn every 401 into a 403.
    """

    def authenticate(self, request: Request) -> tuple[User, ApiKey] | None:
        plaintext = request.META.get("HTTP_X_API_KEY")
        if plaintext is None:
            return None
        if request.META.get("HTTP_AUTHORIZATION", "").strip():
            raise AmbiguousCredentials()
        try:
            key = api_key_verify(plaintext=plaintext.strip())
        except CredentialRefused as exc:  # a 401: tell the caller which schemes we accept
            exc.headers.setdefault("WWW-Authenticate", self.authenticate_header(request))
            _note_refused(request, exc.api_key)
            raise
        if key.ip_whitelist and client_ip(request) not in key.ip_whitelist:
            _note_refused(request, key)
            raise IpNotAllowed()
        if account_suspended(key.account):
            _note_refused(request, key)
            raise AccountSuspended()
        match = request._request.resolver_match
        refusal = roles.key_refusal(
            user=key.user,
            livemode=key.livemode,
            view_name=match.view_name if match is not None else None,
            method=request.method or "",
        )
        if refusal is not None:  # a live key may do what its creator's role may
            _note_refused(request, key)
            raise PermissionDenied(refusal)
        services.api_key_mark_used(key=key)
        return key.user, key

    def authenticate_header(self, request: Request) -> str:
        """Both schemes the API accepts, the JWT one first (RFC 9110 lists challenges)."""
        bearer = JWTAuthentication().authenticate_header(request)
        return f'{bearer}, ApiKey realm="api", header="{API_KEY_HEADER}"'


class JwtAuthentication(JWTAuthentication):
    """SimpleJWT's Bearer authentication, whose user is read with its account and the
    account's ancestors in one query (the view reads no account again), and refused with 403
    ``account_suspended`` while any of them is suspended (contract section 18)."""

    def get_user(self, validated_token: Token) -> User:  # type: ignore[override]
        try:
            user_id = validated_token[jwt_settings.USER_ID_CLAIM]
        except KeyError as exc:
            raise InvalidToken("Token contained no recognizable user identification") from exc
        user = (
            User.objects.select_related(ancestors_path("account"))
            .filter(**{jwt_settings.USER_ID_FIELD: user_id})
            .first()
        )
        if user is None:
            raise AuthenticationFailed("User not found", code="user_not_found")
        if jwt_settings.CHECK_USER_IS_ACTIVE and not user.is_active:
            raise AuthenticationFailed("User is inactive", code="user_inactive")
        if jwt_settings.CHECK_REVOKE_TOKEN and validated_token.get(
            jwt_settings.REVOKE_TOKEN_CLAIM
        ) != get_md5_hash_password(user.password):
            raise AuthenticationFailed("The user's password has been changed.")
        if account_suspended(user.account):
            raise AccountSuspended()
        return user


def _note_refused(request: Request, key: ApiKey | None) -> None:
    """Remember a key whose secret was proved but which is refused (revoked, or outside its
    IP whitelist, or its creator's role) on the underlying request, for its request log
    (``refused_api_key``)."""
    if key is not None:
        request._request.refused_api_key = key  # type: ignore[attr-defined]


def refused_api_key(request) -> ApiKey | None:
    """The key refused on this request after its secret was proved, if any."""
    return getattr(request, "refused_api_key", None)


def request_api_key(request: Request) -> ApiKey | None:
    """The key that authenticated this request, or None for a web session (JWT or site)."""
    auth = getattr(request, "auth", None)
    return auth if isinstance(auth, ApiKey) else None


def request_livemode(request: Request) -> bool:
    """False for a test key; True for a live key and for web sessions."""
    key = request_api_key(request)
    return key.livemode if key is not None else True


def request_units_per_request(request: Request) -> int:
    """Recharge units (Σ quantity) one request may order: the key's limit, else the live one."""
    key = request_api_key(request)
    return key.units_per_request if key is not None else settings.API_KEY_UNITS_PER_REQUEST_LIVE
