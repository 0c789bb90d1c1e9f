"""The low-balance alert's form, for any page that offers it (the webhooks page does): the
wallet owns the threshold, the page only places the form."""

from __future__ import annotations

from django import template

from wallet.forms import ThresholdForm
from wallet.selectors import live_wallet

register = template.Library()


@register.inclusion_tag("wallet/threshold_form.html", takes_context=True)
def wallet_threshold_form(context, account, next: str = "") -> dict:
    wallet = live_wallet(account=account)
    threshold = wallet.low_balance_threshold if wallet else None
    return {
        "threshold_form": ThresholdForm(initial={"threshold": threshold}),
        "wallet": wallet,
        "next": next,
        "csrf_token": context.get("csrf_token"),
        "request": context.get("request"),
    }
