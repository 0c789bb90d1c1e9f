"""Reads of wallets and the ledger."""

from __future__ import annotations

from decimal import Decimal

from django.db.models import DecimalField, F, QuerySet, Sum, Value
from django.db.models.functions import Coalesce

from accounts.models import Account
from reseller.money import ZERO
from wallet.models import LedgerEntry, TopUp, Wallet


def live_wallet(*, account: Account) -> Wallet | None:
    return Wallet.objects.filter(account=account, kind=Wallet.Kind.LIVE).first()


def wallet_available(*, account: Account) -> tuple[Decimal, str]:
    """The cached balance: one indexed row, whatever the number of entries."""
    wallet = live_wallet(account=account)
    if wallet is None:
        return ZERO, account.wallet_currency
    return wallet.balance, wallet.currency


def wallet_entries(*, wallet: Wallet) -> QuerySet[LedgerEntry]:
    return wallet.entries.order_by("-id")


def account_topups(*, account: Account) -> QuerySet[TopUp]:
    """The live wallet's top-ups: a test key's sandbox additions are not the account's money."""
    return TopUp.objects.filter(wallet__account=account, wallet__kind=Wallet.Kind.LIVE).order_by(
        "-id"
    )


def ledger_mismatches() -> list[tuple[Wallet, Decimal]]:
    """Wallets whose cached balance differs from the sum of their entries (should be none)."""
    wallets = (
        Wallet.objects.annotate(
            total=Coalesce(
                Sum("entries__amount"),
                Value(ZERO),
                output_field=DecimalField(max_digits=14, decimal_places=2),
            )
        )
        .exclude(balance=F("total"))
        .select_related("account")
    )
    return [(wallet, wallet.total) for wallet in wallets]
