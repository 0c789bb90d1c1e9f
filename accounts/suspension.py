"""Suspended accounts (contract section 18): an account whose ``suspended_at`` is set, or one
of whose ancestors' is, has its API keys, JWTs and site sessions refused with 403
``account_suspended``; resuming (clearing ``suspended_at``) restores them at once.

Nothing is cached: each request reads the account with its ancestors in the query that loads
it anyway (the key's row, the JWT's user, or the session user's account), joined up to
``NETWORK_MAX_DEPTH`` levels, so a suspension counts from the next request in every process.
"""

from __future__ import annotations

from collections.abc import Iterator

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from accounts.errors import AccountSuspended
from accounts.models import Account
from reseller.errors import problem_response
from reseller.middleware import is_api_path

# Site routes a person of a suspended account may still use: leaving, the language, and the
# back office (staff act on suspended accounts; the admin asks for is_staff itself).
OPEN_WHILE_SUSPENDED = ("accounts:logout", "set_language", "admin:")


def ancestors_path(prefix: str = "") -> str:
    """The ``select_related`` path that loads an account's ancestors with it: ``parent`` as
    many times as a network has levels above its deepest agent (``account__parent__parent``
    by default, with ``prefix="account"``)."""
    levels = max(settings.NETWORK_MAX_DEPTH - 1, 1)
    path = "__".join(["parent"] * levels)
    return f"{prefix}__{path}" if prefix else path


def account_chain(account: Account) -> Iterator[Account]:
    """The account, then its parent, and so on up to its top account. Loaded with
    ``ancestors_path`` the walk reads no row; a chain deeper than that reads the rest."""
    node: Account | None = account
    while node is not None:
        yield node
        node = node.parent if node.parent_id is not None else None


def account_suspended(account: Account) -> bool:
    """Whether the account or one of its ancestors is suspended."""
    return any(node.suspended_at is not None for node in account_chain(account))


def suspended_above(account: Account, *, by_depth: int) -> bool:
    """Is ``account`` held by a suspension that the ancestor at level ``by_depth`` may not
    lift (one made higher up, or by staff: ``Account.suspended_by_depth``)?
    ``account_set_suspended`` decides the same in its statement."""
    held = account.suspended_by_depth
    return account.suspended_at is not None and held is not None and held < by_depth


def account_with_ancestors(*, account_id: int) -> Account:
    return Account.objects.select_related(ancestors_path()).get(pk=account_id)


def _uses_header_credential(request: HttpRequest) -> bool:
    """An API request with a key or a Bearer token: DRF's authentication checks those (the
    key wins over a session cookie sent along, as the JWT does)."""
    return is_api_path(request.path) and bool(
        request.headers.get("x-api-key") or request.headers.get("Authorization", "").strip()
    )


class SuspendedAccountMiddleware:
    """Refuses the site session of a person whose account (or an ancestor) is suspended: a
    403 page on the site, a 403 ``account_suspended`` problem on the API. The account is read
    with its ancestors in one query and kept on the user, so the view reads no account again.
    API keys and JWTs are checked by their authentication classes (accounts.authentication)."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_view(self, request: HttpRequest, view_func, view_args, view_kwargs):
        if _uses_header_credential(request):
            return None
        user = getattr(request, "user", None)
        if user is None or not user.is_authenticated:
            return None
        account = account_with_ancestors(account_id=user.account_id)
        user.account = account
        if not account_suspended(account):
            return None
        match = request.resolver_match
        view_name = match.view_name if match is not None else ""
        if any(view_name.startswith(name) for name in OPEN_WHILE_SUSPENDED):
            return None
        refusal = AccountSuspended()
        if is_api_path(request.path):
            return problem_response(
                request, status=403, code=refusal.code, detail=str(refusal.detail)
            )
        return render(
            request,
            "403.html",
            {"message": refusal.detail, "suspended": True},
            status=403,
        )
