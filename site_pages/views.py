"""The site's pages that show several apps at once (docs/architecture.md, "Layers"). They sit
on top, beside the back office, so that every app imports only the apps below it. A page keeps
the address and the URL name of the app it belongs to (site_pages/urls.py), and its template
stays with that app's; a page of one app stays in that app.
"""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.utils import timezone
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from accounts import selectors as account_selectors
from accounts import services as account_services
from accounts.errors import ApiKeyNotEditable
from accounts.forms import ApiKeyWhitelistForm
from accounts.http import AuthenticatedRequest
from orders.selectors import sandbox_recharges
from recharges.sandbox import GUIDE as SANDBOX_GUIDE
from recharges.sandbox import sandbox_present
from reseller.errors import ApplicationError
from sandbox.balances import ADDITIONS_PER_HOUR as SANDBOX_PER_HOUR
from sandbox.balances import AMOUNTS as SANDBOX_AMOUNTS
from sandbox.balances import CAP as SANDBOX_CAP
from sandbox.balances import sandbox_balance, sandbox_balances, sandbox_topup

# -- API keys (accounts): a test key's sandbox balance, its top-ups and its test recharges -----
# Keys of other accounts do not exist for these pages (404).


@login_required
@require_GET
def api_keys(request: AuthenticatedRequest) -> HttpResponse:
    keys = list(account_selectors.api_keys_of_account(account=request.user.account))
    balances = sandbox_balances(keys=[key for key in keys if not key.livemode])
    for key in keys:
        key.sandbox_balance = balances.get(key.pk)  # type: ignore[attr-defined]
    return render(request, "accounts/keys.html", {"keys": keys})


@login_required
@require_http_methods(["GET", "POST"])
def api_key_detail(request: AuthenticatedRequest, key_id: str) -> HttpResponse:
    key = account_selectors.api_key_of_account(account=request.user.account, public_id=key_id)
    form = ApiKeyWhitelistForm(
        request.POST if request.method == "POST" else None,
        initial={"ip_whitelist": key.ip_whitelist},
    )
    if request.method == "POST" and form.is_valid():
        try:
            account_services.api_key_set_whitelist(
                key=key, ip_whitelist=form.cleaned_data["ip_whitelist"]
            )
        except ApiKeyNotEditable as exc:
            messages.error(request, exc.detail)
        else:
            messages.success(request, _("The IP whitelist is saved."))
        return redirect("accounts:api-key", key_id=key.public_id)
    context = {"key": key, "form": form}
    if not key.livemode:
        context["sandbox_balance"] = sandbox_balance(key=key)[0]
        context["sandbox_amounts"] = [int(amount) for amount in SANDBOX_AMOUNTS]
        context["sandbox_cap"] = SANDBOX_CAP
        context["sandbox_per_hour"] = SANDBOX_PER_HOUR
        recharges = sandbox_recharges(api_key=key)
        sandbox_present(recharges, now=timezone.now())  # a read: shown as settled, not written
        context["sandbox_recharges"] = recharges
        context["sandbox_endings"] = SANDBOX_GUIDE
    return render(request, "accounts/keys_detail.html", context)


@login_required
@require_POST
def api_key_sandbox_topup(request: AuthenticatedRequest, key_id: str) -> HttpResponse:
    """The dashboard's sandbox buttons: the same service and rules as the CLI."""
    key = account_selectors.api_key_of_account(account=request.user.account, public_id=key_id)
    try:
        wallet = sandbox_topup(key=key, amount=request.POST.get("amount", ""), by=request.user)
    except ApplicationError as exc:
        messages.error(request, exc.fields[0]["message"] if exc.fields else exc.detail)
    else:
        messages.success(
            request,
            _("Added to the sandbox. Balance: %(balance)s %(currency)s.")
            % {"balance": wallet.balance, "currency": wallet.currency},
        )
    return redirect("accounts:api-key", key_id=key.public_id)
