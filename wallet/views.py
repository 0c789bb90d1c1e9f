"""The site's wallet pages: balance, ledger entries, monthly totals, top-ups (bank transfer or
card), and the statement of a period with its downloads (docs/contract.md §13)."""

from __future__ import annotations

import calendar
from datetime import date
from decimal import Decimal, InvalidOperation
from typing import Any

from django import forms
from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpResponse, HttpResponseBase
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.utils.http import url_has_allowed_host_and_scheme, urlencode
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from django.views.decorators.http import require_GET, require_POST

from accounts.http import AuthenticatedRequest
from accounts.models import Account, ApiKey
from orders.statements import (
    LIVE_RECHARGE_STATUSES,
    period_recharges,
    recharge_filter_keys,
    recharge_filter_operators,
)
from payments import gateway
from recharges.models import Recharge
from reseller.errors import ValidationFailed
from reseller.exports import csv_response, csv_stream, xlsx_response
from reseller.money import quantize
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
            "test_mode": gateway.test_mode(),
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


# -- statements ------------------------------------------------------------------------------

ENTRIES_SHOWN = 100  # the page's table; the downloads hold every entry of the period
SITE = "site"  # the key filter's choice for recharges bought on the site (no API key)


class RechargeFilters(forms.Form):
    """The filters of the period's recharges; choices from the catalog and the account's keys,
    so anything else (a typo, junk) is an error on the page, never a query."""

    status = forms.ChoiceField(label=gettext_lazy("Status"), required=False)
    operator = forms.ChoiceField(label=gettext_lazy("Operator"), required=False)
    country = forms.ChoiceField(label=gettext_lazy("Country"), required=False)
    key = forms.ChoiceField(label=gettext_lazy("Key"), required=False)

    def __init__(self, data: Any, *, account: Account) -> None:
        super().__init__(data)
        self.operators = {op.public_id: op for op in recharge_filter_operators()}
        self.keys = {key.public_id: key for key in recharge_filter_keys(account=account)}
        statuses = dict(Recharge.Status.choices)
        self._choose(
            "status",
            [
                ("", _("Any status")),
                *((status.value, statuses[status]) for status in LIVE_RECHARGE_STATUSES),
            ],
        )
        by_country: dict[str, list[tuple[str, str]]] = {}
        countries: dict[str, str] = {}
        for op in self.operators.values():
            name = op.country.name_localized
            countries[op.country.code] = name
            by_country.setdefault(name, []).append((op.public_id, op.name_localized))
        self._choose(
            "operator",
            [
                ("", _("Any operator")),
                *sorted(
                    (name, sorted(ops, key=lambda o: o[1])) for name, ops in by_country.items()
                ),
            ],
        )
        self._choose(
            "country",
            [("", _("Any country")), *sorted(countries.items(), key=lambda item: item[1])],
        )
        self._choose(
            "key",
            [
                ("", _("Any or none")),
                (SITE, _("On the site")),
                *((key.public_id, self._key_label(key)) for key in self.keys.values()),
            ],
        )

    def _choose(self, name: str, choices: list[Any]) -> None:
        field = self.fields[name]
        assert isinstance(field, forms.ChoiceField)
        field.choices = choices

    @staticmethod
    def _key_label(key: ApiKey) -> str:
        words = {"name": key.name, "prefix": key.prefix}
        if key.revoked_at:
            return _("%(name)s (%(prefix)s…), revoked") % words
        return f"{key.name} ({key.prefix}…)"

    def selection(self) -> dict[str, Any]:
        """The valid filters as ``period_recharges`` takes them (an invalid one is
        left out, and its error shown)."""
        data = self.cleaned_data if self.is_bound else {}
        key = data.get("key") or ""
        return {
            "status": data.get("status") or None,
            "operator": self.operators.get(data.get("operator") or ""),
            "country": data.get("country") or None,
            "api_key": self.keys.get(key),
            "site_only": key == SITE,
            "operators": {op.pk: op for op in self.operators.values()},
        }


def _period(request: AuthenticatedRequest) -> statements.Period:
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
def statement(request: AuthenticatedRequest) -> HttpResponse:
    """The live wallet's statement of a period (UTC days, this month so far by default): its
    totals, its first entries, the downloads of all of them; and the period's recharges."""
    account = request.user.account
    live = wallet_get_or_create(account=account)
    filters = RechargeFilters(request.GET, account=account)
    filters.is_valid()
    context: dict[str, Any] = {
        "wallet": live,
        "filters": filters,
        "values": {
            "from": request.GET.get("from", ""),
            "to": request.GET.get("to", ""),
        },
        "errors": {},
        "filtered": any(filters.cleaned_data.get(name) for name in filters.fields),
        "shown": ENTRIES_SHOWN,
    }
    try:
        period = _period(request)
    except ValidationFailed as error:
        for problem in error.fields or []:
            context["errors"].setdefault(problem["field"], []).append(problem["message"])
        return render(request, "wallet/statement.html", context)
    query = urlencode({"from": period.start.isoformat(), "to": period.end.isoformat()})
    context["values"] = {"from": period.start.isoformat(), "to": period.end.isoformat()}
    context.update(
        period=period,
        summary={  # quantized: SQLite sums decimals as floats (PostgreSQL's are exact)
            name: quantize(value) if isinstance(value, Decimal) else value
            for name, value in statements.statement_summary(wallet=live, period=period).items()
        },
        entries=list(statements.statement_entries(wallet=live, period=period)[:ENTRIES_SHOWN]),
        csv_url=f"{reverse('wallet:statement-csv')}?{query}",
        xlsx_url=f"{reverse('wallet:statement-xlsx')}?{query}",
        recharges=period_recharges(
            account=account, since=period.since, until=period.until, **filters.selection()
        ),
    )
    return render(request, "wallet/statement.html", context)


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
        period = _period(request)
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
                % {"amount": wallet.low_balance_threshold, "currency": wallet.currency},
            )
    else:
        messages.error(request, _("Give an amount of 0 or more, such as 100.00."))
    back = request.POST.get("next", "")
    safe = url_has_allowed_host_and_scheme(
        back, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    )
    return redirect(back if safe else "wallet:wallet")
