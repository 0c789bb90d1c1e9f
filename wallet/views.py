"""The site's wallet page: balance, ledger entries, top-ups (bank transfer or card)."""

from __future__ import annotations

from decimal import Decimal, InvalidOperation

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET, require_POST

from accounts.http import AuthenticatedRequest
from orders.card import gateway
from wallet import selectors
from wallet.services import (
    TOPUP_MAX,
    TOPUP_MIN,
    bank_details,
    bank_transfer_request,
    wallet_get_or_create,
)


@login_required
@require_GET
def wallet(request: AuthenticatedRequest) -> HttpResponse:
    account = request.user.account
    live = wallet_get_or_create(account=account)
    return render(
        request,
        "wallet/wallet.html",
        {
            "wallet": live,
            "entries": list(selectors.wallet_entries(wallet=live)[:50]),
            "topups": list(selectors.account_topups(account=account)[:20]),
            "cards_enabled": gateway.configured(),
            "test_mode": gateway.test_mode(),
            "stripe_js_url": settings.STRIPE_JS_URL,
            "publishable_key": gateway.publishable_key(),
            "bank": bank_details(),
        },
    )


def _amount(raw: str) -> Decimal | None:
    """A top-up amount typed in a form, or None for anything else (NaN, 1e100, 29 digits…)."""
    try:
        amount = Decimal(raw.replace(",", ".").strip())
        if not amount.is_finite() or not TOPUP_MIN <= amount <= TOPUP_MAX:
            return None  # bounds first: quantizing a huge number raises
        return amount if amount == amount.quantize(Decimal("0.01")) else None
    except (InvalidOperation, AttributeError):
        return None


@login_required
@require_POST
def bank_transfer(request: AuthenticatedRequest) -> HttpResponse:
    """Request a bank-transfer top-up: pending until staff see the money and approve it."""
    bank = bank_details()
    if bank is None:
        messages.error(request, _("Bank transfers are not available at the moment."))
        return redirect("wallet:wallet")
    amount = _amount(request.POST.get("amount", ""))
    if amount is None:
        messages.error(
            request,
            _("Enter an amount from %(min)s to %(max)s.") % {"min": TOPUP_MIN, "max": TOPUP_MAX},
        )
        return redirect("wallet:wallet")
    topup = bank_transfer_request(account=request.user.account, amount=amount, by=request.user)
    messages.success(
        request,
        _(
            "Top-up %(ref)s requested. Send %(amount)s %(currency)s by bank transfer to "
            "%(beneficiary)s, IBAN %(iban)s, BIC %(bic)s, quoting %(ref)s; your balance is "
            "credited when we receive it."
        )
        % {
            "ref": topup.public_id,
            "amount": topup.amount,
            "currency": topup.currency,
            **bank,
        },
    )
    return redirect("wallet:wallet")
