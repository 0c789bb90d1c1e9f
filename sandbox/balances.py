"""Sandbox balances of test keys (docs/contract.md §6): fake euros, real ledger rules.

Additions come from the key dashboard or the ``sandbox_topup`` command, through this one
service: only 10, 50, 100 or 500 EUR at a time, never above 1,000 EUR, at most 5 additions
in any hour per key. The wallet row lock makes the cap and the hourly count exact under
concurrency.
"""

from __future__ import annotations

import math
from datetime import UTC, timedelta
from decimal import Decimal, InvalidOperation

from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from accounts.errors import TestKeyRequiredError
from reseller.errors import ApplicationError, RateLimited, ValidationFailed
from reseller.money import ZERO, quantize
from wallet.models import TopUp, Wallet
from wallet.services import sandbox_wallet_for_key, topup_credit_now, wallet_lock

AMOUNTS = (Decimal("10"), Decimal("50"), Decimal("100"), Decimal("500"))
CAP = Decimal("1000.00")
ADDITIONS_PER_HOUR = 5
WINDOW = timedelta(hours=1)


class SandboxBalanceCap(ApplicationError):
    code = "sandbox_balance_cap"
    status = 400
    title = gettext_lazy("Sandbox balance cap")
    default_detail = gettext_lazy("A sandbox balance never goes above 1000.00 EUR.")


class SandboxTopupLimit(RateLimited):
    code = "sandbox_topup_limit"
    title = gettext_lazy("Too many sandbox additions")
    default_detail = gettext_lazy("At most 5 sandbox additions per hour per key.")


def parse_amount(raw) -> Decimal:
    try:
        amount = Decimal(str(raw))
    except (InvalidOperation, ValueError) as exc:
        raise _bad_amount() from exc
    if not amount.is_finite() or amount not in AMOUNTS:  # sNaN cannot even be compared
        raise _bad_amount()
    return quantize(amount)


def _bad_amount() -> ValidationFailed:
    return ValidationFailed(
        fields=[
            {
                "field": "amount",
                "code": "invalid_amount",
                "message": _("Add 10, 50, 100 or 500 EUR at a time."),
            }
        ]
    )


@transaction.atomic
def sandbox_topup(*, key, amount, by=None) -> Wallet:
    """Add fake euros to a test key's sandbox balance, under the sandbox rules."""
    if key.livemode or not key.is_active:
        raise TestKeyRequiredError(_("Only an active test key has a sandbox balance."))
    value = parse_amount(amount)
    wallet = wallet_lock(wallet_id=sandbox_wallet_for_key(key=key).pk)
    now = timezone.now()
    recent = list(
        TopUp.objects.filter(wallet=wallet, created_at__gt=now - WINDOW)
        .order_by("created_at")
        .values_list("created_at", flat=True)
    )
    if len(recent) >= ADDITIONS_PER_HOUR:
        next_at = recent[0] + WINDOW
        retry = (next_at - now).total_seconds()
        raise SandboxTopupLimit(
            _(
                "At most %(count)d sandbox additions per hour per key. The next one is possible "
                "in %(minutes)d min, at %(time)s UTC."
            )
            % {
                "count": ADDITIONS_PER_HOUR,
                "minutes": max(1, math.ceil(retry / 60)),
                "time": next_at.astimezone(UTC).strftime("%H:%M"),
            },
            retry_after=max(1, int(retry) + 1),
        )
    if wallet.balance + value > CAP:
        raise SandboxBalanceCap(
            _(
                "The sandbox balance is %(balance)s EUR; adding %(amount)s EUR would pass the "
                "%(cap)s EUR cap."
            )
            % {"balance": wallet.balance, "amount": value, "cap": CAP}
        )
    topup_credit_now(
        wallet=wallet, method=TopUp.Method.SANDBOX, amount=value, memo="sandbox addition", by=by
    )
    return wallet


def sandbox_balance(*, key) -> tuple[Decimal, str]:
    wallet = Wallet.objects.filter(api_key=key, kind=Wallet.Kind.SANDBOX).first()
    return (wallet.balance, wallet.currency) if wallet else (ZERO, "EUR")


def sandbox_balances(*, keys) -> dict[int, Decimal]:
    """Sandbox balances of several keys in one query, by key id (absent: never funded)."""
    return dict(
        Wallet.objects.filter(api_key__in=keys, kind=Wallet.Kind.SANDBOX).values_list(
            "api_key_id", "balance"
        )
    )
