"""Team roles (issue 18): who in an account may do what, enforced on every page, API call and
export by one policy, by route.

- owner: everything, and the team itself;
- developer: API keys, webhooks, request logs; no money (wallet, statements, payments,
  batches, carts);
- finance: the wallet, statements, payments and batches; no keys, webhooks or logs.

The policy applies to people: web sessions on the site and on the API (session or JWT). An
API key acts for the whole account, as the owner who created it decided, so key requests are
not checked here (a key's own limits apply).
"""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils.translation import gettext as _
from rest_framework.exceptions import AuthenticationFailed
from rest_framework_simplejwt.authentication import JWTAuthentication
from rest_framework_simplejwt.exceptions import InvalidToken, TokenError

from reseller.errors import problem_response
from reseller.middleware import is_api_path

OWNER, DEVELOPER, FINANCE = "owner", "developer", "finance"
ROLES = (OWNER, DEVELOPER, FINANCE)
MONEY, KEYS, TEAM = "money", "keys", "team"
ALLOWED = {MONEY: {OWNER, FINANCE}, KEYS: {OWNER, DEVELOPER}, TEAM: {OWNER}}

# URL names (``namespace:name`` on the site, bare names on the API) by the start of the name.
ROUTES: tuple[tuple[str, str], ...] = (
    # the site
    ("wallet:", MONEY),
    ("orders:cart", MONEY),
    ("orders:checkout", MONEY),
    ("orders:history", MONEY),
    ("orders:receipt", MONEY),
    ("orders:batch", MONEY),
    ("accounts:api-key", KEYS),
    ("webhooks:", KEYS),
    ("requestlog:", KEYS),
    ("accounts:team", TEAM),
    ("accounts:member", TEAM),
    # the API
    ("wallet-", MONEY),
    ("topups-", MONEY),
    ("payments-", MONEY),
    ("payment", MONEY),
    ("cart", MONEY),
    ("b2b-batch", MONEY),
)


def area_of(view_name: str) -> str | None:
    for start, area in ROUTES:
        if view_name.startswith(start):
            return area
    return None


def may(user, area: str | None) -> bool:
    """Whether a signed-in person may use an area (None: anyone of the account)."""
    if area is None or user.is_staff:
        return True
    return getattr(user, "role", OWNER) in ALLOWED[area]


def _person(request: HttpRequest):
    """Who is asking: the session's user, or the JWT's on the API; None for API keys (they act
    for the account) and for anyone not signed in (the view answers 401 or the login page)."""
    if is_api_path(request.path):
        if request.headers.get("x-api-key"):
            return None
        if request.headers.get("Authorization", "").startswith("Bearer "):
            try:
                found = JWTAuthentication().authenticate(request)  # type: ignore[arg-type]
            except (AuthenticationFailed, InvalidToken, TokenError):
                return None
            return found[0] if found else None
    user = getattr(request, "user", None)
    return user if user is not None and user.is_authenticated else None


class RolePolicyMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_view(self, request: HttpRequest, view_func, view_args, view_kwargs):
        match = request.resolver_match
        area = area_of(match.view_name) if match is not None else None
        if area is None:
            return None
        person = _person(request)
        if person is None or may(person, area):
            return None
        message = {
            MONEY: _("Your role in this account does not include its money."),
            KEYS: _("Your role in this account does not include API keys, webhooks or logs."),
            TEAM: _("Only the account's owners manage its team."),
        }[area]
        if is_api_path(request.path):
            return problem_response(request, status=403, code="permission_denied", detail=message)
        return render(request, "403.html", {"message": message}, status=403)
