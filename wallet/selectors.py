"""Reads of wallets and the ledger: balances, entries, monthly totals (the recharges of a
statement's period are read by ``orders.statements``)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, time
from decimal import Decimal

from django.db.models import DecimalField, F, Q, QuerySet, Sum, Value
from django.db.models.functions import Coalesce, Round, TruncMonth
from django.utils import timezone

from accounts.models import Account
from reseller.db import exact_sum
from reseller.money import MONEY, ZERO, quantize
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
                exact_sum("entries__amount", places=MONEY["decimal_places"]),
                Value(ZERO),
                output_field=DecimalField(max_digits=14, decimal_places=2),
            )
        )
        # Both sides rounded to the cent: on SQLite the cached balance is a float too
        # (0.10 + 0.20 is 0.30000000000000004 there); PostgreSQL's are exact already.
        .exclude(total=Round(F("balance"), MONEY["decimal_places"]))
        .select_related("account")
    )
    return [(wallet, wallet.total) for wallet in wallets]


def ledger_totals(
    *, account_ids: Iterable[int], references: Sequence[str], kinds: Sequence[str]
) -> dict[str, dict[str, Decimal]]:
    """The entries of these kinds and references in these accounts' live wallets, summed by
    reference and kind (one grouped query, on the (wallet, kind, reference) index): what the
    books check compares with the network's commissions."""
    rows = (
        LedgerEntry.objects.filter(
            wallet__account_id__in=account_ids,
            wallet__kind=Wallet.Kind.LIVE,
            kind__in=kinds,
            reference__in=references,
        )
        .values("reference", "kind")
        .annotate(total=Sum("amount"))
    )
    found: dict[str, dict[str, Decimal]] = {}
    for row in rows:
        found.setdefault(row["reference"], {})[row["kind"]] = row["total"]
    return found


# -- monthly totals (the wallet page's chart) ------------------------------------------------


@dataclass(frozen=True)
class MonthTotal:
    month: date  # the first day of the month (UTC, like statements)
    credits: Decimal  # >= 0
    debits: Decimal  # <= 0, as the ledger signs them


def _month_start(day: date, *, back: int = 0) -> date:
    index = day.year * 12 + day.month - 1 - back
    return date(index // 12, index % 12 + 1, 1)


def monthly_totals(
    wallet: Wallet, *, months: int = 12, today: date | None = None
) -> list[MonthTotal]:
    """Credits and debits of each of the last ``months`` months, this one included, oldest
    first; a month without entries is there with zeros. One grouped query (UTC months, the
    same days as a statement's)."""
    today = today or timezone.now().date()
    first = _month_start(today, back=months - 1)
    rows = (
        LedgerEntry.objects.filter(
            wallet=wallet, created_at__gte=datetime.combine(first, time.min, tzinfo=UTC)
        )
        .annotate(month=TruncMonth("created_at", tzinfo=UTC))
        .values("month")
        .annotate(
            credits=Sum("amount", filter=Q(amount__gt=0)),
            debits=Sum("amount", filter=Q(amount__lt=0)),
        )
        .order_by("month")
    )
    found = {  # quantized: SQLite sums decimals as floats (PostgreSQL's are exact)
        (row["month"].year, row["month"].month): (
            quantize(row["credits"] or ZERO),
            quantize(row["debits"] or ZERO),
        )
        for row in rows
    }
    totals = []
    for back in range(months - 1, -1, -1):
        month = _month_start(today, back=back)
        credits, debits = found.get((month.year, month.month), (ZERO, ZERO))
        totals.append(MonthTotal(month=month, credits=credits, debits=debits))
    return totals
