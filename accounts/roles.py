"""Team roles (issue 18): who in an account may do what, enforced on every page, API call and
export by one policy, by route.

- owner: everything, and the team itself;
- developer: API keys, webhooks, request logs; no money (wallet, statements, payments,
  batches, carts);
- finance: the wallet, statements, payments and batches; no keys, webhooks or logs;
- the network of agents (contract section 18): owners and finance; not developers.

The policy applies to people: web sessions on the site and on the API (session or JWT), and
to live API keys, which carry the role their creator has now (``key_refusal``, checked when the
key authenticates): a developer's live key cannot move or read the account's money any more
than the developer can. Test keys act on their own sandbox balance, never the account's money,
so every role's test key may use them.

Every route has a decision: an area in ``ROUTES``, or a place in ``ANY_ROLE`` with the reason
it is open to every role. A route in neither is the owners' only (fail closed): a new view
nobody classified is refused to developers and finance, and tests/test_roles_every_route.py
names it.
"""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils.translation import gettext as _
from rest_framework.exceptions import AuthenticationFailed, PermissionDenied
from rest_framework_simplejwt.authentication import JWTAuthentication
from rest_framework_simplejwt.exceptions import InvalidToken, TokenError

from reseller.errors import problem_response
from reseller.middleware import is_api_path

OWNER, DEVELOPER, FINANCE = "owner", "developer", "finance"
ROLES = (OWNER, DEVELOPER, FINANCE)
MONEY, KEYS, TEAM, NETWORK = "money", "keys", "team", "network"
ALLOWED = {
    MONEY: {OWNER, FINANCE},
    KEYS: {OWNER, DEVELOPER},
    TEAM: {OWNER},
    NETWORK: {OWNER, FINANCE},
}

# URL names (``namespace:name`` on the site, bare names on the API) by the start of the name.
ROUTES: tuple[tuple[str, str], ...] = (
    # the site
    # The low-balance alert's form sits on the webhooks page (wallet.balance_low is an event).
    ("wallet:threshold", KEYS),
    ("wallet:", MONEY),
    ("orders:cart", MONEY),
    ("orders:checkout", MONEY),
    ("orders:history", MONEY),
    ("orders:receipt", MONEY),
    ("orders:batch", MONEY),
    # the Network page's transfer form: the network's money, as POST /network/transfers
    ("network:transfer", MONEY),
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
    # Price lists (contract section 18): what agents pay, the account's money.
    ("network-price-lists", MONEY),
    # the network's money: commissions (contract section 18); transfers check it in the view
    ("network-commissions", MONEY),
)


# Routes open to every role, each with its reason. A name ending in ``*`` covers every name
# that starts with the rest; any other name is exact, so a new route beside these is undecided.
ANY_ROLE: tuple[tuple[str, str], ...] = (
    # public: no account needed (the view answers a visitor as well as a member)
    ("home", "public: the front page"),
    ("catalog:*", "public: the catalog pages"),
    ("catalog-*", "public: the catalog API"),
    ("healthz", "public: the load balancer's probe"),
    ("favicon", "public: the site's icon, as browsers ask for it"),
    ("metrics", "Prometheus: no person; the view asks for its token or address"),
    ("set_language", "public: the language of the pages"),
    ("schema", "public: the OpenAPI schema"),
    ("api-docs", "public: the API's interactive documentation"),
    ("api-error*", "public: the page of each error code, where a problem's type links"),
    ("auth-login", "public: logging in"),
    ("auth-refresh", "public: renewing one's own token"),
    ("accounts:login", "public: logging in"),
    ("accounts:logout", "every person logs themselves out"),
    ("accounts:signup*", "public: signing up, its confirmation"),
    ("accounts:invitation", "public: the invitee has no session yet"),
    ("accounts:email-confirm", "the link mailed to the person changing their address"),
    ("accounts:password-reset*", "public: a forgotten password"),
    ("checkout:stripe-webhook", "Stripe's signed events: no person, no session"),
    ("orders:guest-*", "public: a guest's checkout and receipt link (no account's money)"),
    ("orders:product-price", "public: the price of an amount, as the catalog pages show it"),
    ("guest-payments-*", "public: a guest's card checkout (the house guest account's order)"),
    ("recharges:provider-callback", "a provider's callback: no person; only triggers a look-up"),
    # one's own person, not the account's keys or money
    ("auth-me", "one's own user, account name and billing details"),
    ("accounts:profile", "one's own profile; its links follow the role"),
    ("accounts:email-change", "one's own email address"),
    ("accounts:password", "one's own password"),
    # the account's work that is neither keys nor money (today's behaviour, made explicit)
    ("recipients:*", "saved recipients: names for phone numbers, no money"),
    ("b2b-recharges", "recharge lookups, as integrators debug with them; POST needs a B2B key"),
    ("b2b-recharge", "one recharge's status and history; no balance or payment"),
    # Reseller networks (section 18): an agent's id outside the caller's branch is 404 whatever
    # the role, so these views look the agent up first and then check the NETWORK area (403).
    ("network-agent*", "agents: the view answers 404 outside the branch, then checks the role"),
    ("network:agent*", "the Network page: 404 outside the branch, then the role (the view)"),
    ("network-transfers", "transfers: 404 for an agent outside the branch, then MONEY (the view)"),
    ("network-price-list", "one list: 404 for another's whatever the role, then MONEY (the view)"),
    ("sandbox", "a test key only: the view refuses every person (test_key_required)"),
    # staff only: the back office refuses anyone without is_staff, and staff pass any role
    ("admin:*", "staff only: the admin site (is_staff)"),
    ("admin-*", "staff only: the back office API (IsAdminUser)"),
)
# Neither a listed area nor open to every role: the owners' only.
UNDECIDED = "undecided"


# Routes open to every role for reading whose unsafe methods spend the wallet: placing
# recharges with a key is moving money.
SPENDING = ("b2b-recharges",)
SAFE_METHODS = ("GET", "HEAD", "OPTIONS")


def _matches(view_name: str, name: str) -> bool:
    return view_name.startswith(name[:-1]) if name.endswith("*") else view_name == name


def area_of(view_name: str) -> str | None:
    """The area of a route (``ResolverMatch.view_name``): one of ``ALLOWED``, None when any
    role may use it, ``UNDECIDED`` when nobody decided (only owners may)."""
    for start, area in ROUTES:
        if view_name.startswith(start):
            return area
    if any(_matches(view_name, name) for name, _reason in ANY_ROLE):
        return None
    return UNDECIDED


def area_of_request(view_name: str, method: str) -> str | None:
    """``area_of``, where placing recharges (an unsafe method of ``SPENDING``) is money."""
    if view_name in SPENDING and method.upper() not in SAFE_METHODS:
        return MONEY
    return area_of(view_name)


def refusal_message(area: str) -> str:
    """What a person (or a key) refused an area is told."""
    return {
        MONEY: _("Your role in this account does not include its money."),
        KEYS: _("Your role in this account does not include API keys, webhooks or logs."),
        TEAM: _("Only the account's owners manage its team."),
        NETWORK: _("Your role in this account does not include its network of agents."),
        # DRF's own message, translated by its catalogs.
        UNDECIDED: str(PermissionDenied.default_detail),
    }[area]


def key_refusal(*, user, livemode: bool, view_name: str | None, method: str) -> str | None:
    """Why a key may not be used on this route, or None. A live key acts with the role its
    creator has now (promoted, demoted or made staff, the key follows); a test key acts on its
    sandbox balance, so no role is checked."""
    if not livemode or view_name is None:
        return None
    area = area_of_request(view_name, method)
    if area is None or may(user, area):
        return None
    return refusal_message(area)


def may(user, area: str | None) -> bool:
    """Whether a signed-in person may use an area (None: anyone of the account)."""
    if area is None or user.is_staff:
        return True
    role = getattr(user, "role", OWNER)
    return role == OWNER if area == UNDECIDED else role in ALLOWED[area]


def _person(request: HttpRequest):
    """Who is asking: the session's user, or the JWT's on the API; None for API keys (checked
    when they authenticate: ``key_refusal``) and for anyone not signed in (the view answers 401
    or the login page)."""
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
        area = area_of_request(match.view_name, request.method or "") if match else None
        if area is None:
            return None
        person = _person(request)
        if person is None or may(person, area):
            return None
        message = refusal_message(area)
        if is_api_path(request.path):
            return problem_response(request, status=403, code="permission_denied", detail=message)
        return render(request, "403.html", {"message": message}, status=403)
