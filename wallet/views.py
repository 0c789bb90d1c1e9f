"""The site's wallet pages: balance, ledger entries, monthly totals, top-ups (bank transfer or
card), and the downloads of a period's statement (docs/contract.md §13); the statement page
itself shows the period's recharges too, so it is a site page (site_pages.views)."""

from __future__ import annotations

import calendar
from datetime import date
from decimal import Decimal
from typing import Any

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpResponse, HttpResponseBase
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.utils.formats import number_format
from django.utils.http import urlencode
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET, require_POST

from accounts.http import AuthenticatedRequest
from payments import gateway
from reseller.errors import ValidationFailed
from reseller.exports import csv_response, csv_stream, xlsx_response
from reseller.money import amount_typed
from reseller.net import local_url
from wallet import selectors, statements
from wallet.forms import ThresholdForm
from wallet.services import (
    TOPUP_MAX,
    TOPUP_MIN,
    bank_details,
    bank_transfer_request,
    wallet_get_or_create,
    wallet_set_threshold,
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
            "monthly": _with_links(selectors.monthly_totals(live)),
            "topups": list(selectors.account_topups(account=account)[:20]),
            "cards_enabled": gateway.configured(),
            "test_mode": gateway.card_test_mode(),
            "stripe_js_url": settings.STRIPE_JS_URL,
            "publishable_key": gateway.publishable_key(),
            "bank": bank_details(),
        },
    )


def _with_links(months: list[selectors.MonthTotal]) -> list[dict[str, Any]]:
    """Each month of the chart with the address of its statement (to today at most)."""
    today = timezone.now().date()
    page = reverse("wallet:statement")
    out = []
    for total in months:
        last = date(
            total.month.year,
            total.month.month,
            calendar.monthrange(total.month.year, total.month.month)[1],
        )
        period = {"from": total.month.isoformat(), "to": min(last, today).isoformat()}
        out.append({"total": total, "url": f"{page}?{urlencode(period)}"})
    return out


def _amount(raw: str) -> Decimal | None:
    """A top-up amount typed in a form, or None for anything else (NaN, 1e100, 29 digits…)."""
    amount = amount_typed(raw)
    if amount is None or not TOPUP_MIN <= amount <= TOPUP_MAX:
        return None  # bounds first: quantizing a huge number raises
    return amount if amount == amount.quantize(Decimal("0.01")) else None


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
            _("Enter an amount from %(min)s to %(max)s.")
            % {"min": number_format(TOPUP_MIN, 2), "max": number_format(TOPUP_MAX, 2)},
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
            "amount": number_format(topup.amount, 2),
            "currency": topup.currency,
            **bank,
        },
    )
    return redirect("wallet:wallet")


# -- statements ------------------------------------------------------------------------------
# The statement page shows the period's recharges too: it is a site page (site_pages.views),
# with this period and these downloads.


def statement_period(request: AuthenticatedRequest) -> statements.Period:
    """The period of the statement page and its downloads, from ``from`` and ``to``."""
    period = statements.period_parse(start=request.GET.get("from"), end=request.GET.get("to"))
    try:
        period.until  # noqa: B018 (the day after 9999-12-31 does not exist)
    except OverflowError:
        raise ValidationFailed(
            fields=[{"field": "to", "code": "invalid", "message": _("Use a date as YYYY-MM-DD.")}]
        ) from None
    return period


@login_required
@require_GET
def statement_download(request: AuthenticatedRequest, file_format: str) -> HttpResponseBase:
    """Every entry of the period as CSV or XLSX, streamed, as the API's statement gives them
    (docs/contract.md §13). A file names its period: without both dates, or with a bad one,
    the download goes back to the page, which shows the period or says what is wrong."""
    query = request.GET.urlencode()
    back = redirect(reverse("wallet:statement") + (f"?{query}" if query else ""))
    if not (request.GET.get("from") and request.GET.get("to")):
        return back
    try:
        period = statement_period(request)
    except ValidationFailed:
        return back
    live = wallet_get_or_create(account=request.user.account)
    name = f"statement-{period.start}-{period.end}"
    rows = statements.statement_rows(wallet=live, period=period)
    if file_format == "csv":
        return csv_response(f"{name}.csv", csv_stream(statements.COLUMNS, rows))
    return xlsx_response(f"{name}.xlsx", statements.COLUMNS, rows, title=name)


@login_required
@require_POST
def threshold(request: AuthenticatedRequest) -> HttpResponse:
    """The low-balance alert's form (placed on the webhooks page): back to where it was."""
    form = ThresholdForm(request.POST)
    if form.is_valid():
        wallet = wallet_set_threshold(
            account=request.user.account, amount=form.cleaned_data["threshold"]
        )
        if wallet.low_balance_threshold is None:
            messages.success(request, _("No low-balance alert."))
        else:
            messages.success(
                request,
                _("You are told when the wallet goes below %(amount)s %(currency)s.")
                % {
                    "amount": number_format(wallet.low_balance_threshold, 2),
                    "currency": wallet.currency,
                },
            )
    else:
        messages.error(
            request,
            _("Give an amount of 0 or more, such as %(example)s.")
            % {"example": number_format(Decimal(100), 2)},
        )
    return redirect(local_url(request, request.POST.get("next", "")) or "wallet:wallet")
