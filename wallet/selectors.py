"""Reads of wallets and the ledger: balances, entries, monthly totals, and the recharges of a
statement's period."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time
from decimal import Decimal

from django.db.models import Count, DecimalField, F, Q, QuerySet, Sum, Value
from django.db.models.functions import Coalesce, TruncMonth
from django.utils import timezone

from accounts.models import Account, ApiKey
from catalog.models import Country, Operator
from orders.models import Recharge
from reseller.money import ZERO, quantize
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


# -- the recharges of a statement's period ---------------------------------------------------

# The statuses a live recharge can have (the others are the sandbox's simulated outcomes).
LIVE_RECHARGE_STATUSES = (
    Recharge.Status.QUEUED,
    Recharge.Status.WAITLISTED,
    Recharge.Status.DISPATCHED,
    Recharge.Status.DELIVERED,
    Recharge.Status.FAILED,
)


def recharge_filter_operators() -> QuerySet[Operator]:
    """Every operator of the catalog (a past recharge may be at one no longer sold)."""
    return Operator.objects.select_related("country").order_by("country__name", "name")


def recharge_filter_keys(*, account: Account) -> QuerySet[ApiKey]:
    """The account's live keys, revoked ones too: their recharges stay in the history."""
    return ApiKey.objects.filter(account=account, mode=ApiKey.Mode.LIVE).order_by("name", "id")


@dataclass
class RechargeGroup:
    """Recharges counted and summed under one status, operator or country."""

    key: str
    label: str
    count: int = 0
    totals: dict[str, Decimal] = field(default_factory=dict)  # currency -> amount

    def add(self, *, count: int, total: Decimal, currency: str) -> None:
        self.count += count
        self.totals[currency] = self.totals.get(currency, ZERO) + total

    @property
    def amounts(self) -> list[tuple[Decimal, str]]:
        return sorted((amount, currency) for currency, amount in self.totals.items())


@dataclass
class PeriodRecharges:
    overall: RechargeGroup
    by_status: list[RechargeGroup]
    by_operator: list[tuple[RechargeGroup, Country | None]]
    by_country: list[RechargeGroup]


def period_recharges(
    *,
    account: Account,
    since: datetime,
    until: datetime,
    status: str | None = None,
    operator: Operator | None = None,
    country: str | None = None,
    api_key: ApiKey | None = None,
    site_only: bool = False,
    operators: dict[int, Operator] | None = None,
) -> PeriodRecharges:
    """The account's live recharges created in [since, until), narrowed by the filters, counted
    and summed by status, operator and country: one grouped query (status x operator x
    currency, a few rows whatever the number of recharges), folded here. ``operators`` (by pk)
    names the operators; without it they are read in one more query."""
    recharges = Recharge.objects.filter(
        account=account, livemode=True, created_at__gte=since, created_at__lt=until
    )
    if status:
        recharges = recharges.filter(status=status)
    if operator is not None:
        recharges = recharges.filter(product__operator=operator)
    if country:
        recharges = recharges.filter(product__country_id=country)
    if api_key is not None:
        recharges = recharges.filter(order__api_key=api_key)
    if site_only:
        recharges = recharges.filter(order__api_key__isnull=True)
    rows = list(
        recharges.values("status", "product__operator_id", "currency")
        .annotate(count=Count("id"), total=Sum("amount"))
        .order_by()
    )
    if operators is None:
        ids = {row["product__operator_id"] for row in rows}
        operators = Operator.objects.select_related("country").in_bulk(ids)
    labels = dict(Recharge.Status.choices)
    overall = RechargeGroup(key="", label="")
    by_status: dict[str, RechargeGroup] = {}
    by_operator: dict[int, tuple[RechargeGroup, Country | None]] = {}
    by_country: dict[str, RechargeGroup] = {}
    for row in rows:  # one row per group, never per recharge
        count, total, currency = row["count"], quantize(row["total"] or ZERO), row["currency"]
        overall.add(count=count, total=total, currency=currency)
        code = row["status"]
        by_status.setdefault(code, RechargeGroup(key=code, label=str(labels.get(code, code))))
        by_status[code].add(count=count, total=total, currency=currency)
        pk = row["product__operator_id"]
        found = operators.get(pk)
        if pk not in by_operator:
            by_operator[pk] = (
                RechargeGroup(
                    key=found.public_id if found else str(pk),
                    label=found.name_localized if found else str(pk),
                ),
                found.country if found else None,
            )
        by_operator[pk][0].add(count=count, total=total, currency=currency)
        if found is not None:
            place = found.country
            by_country.setdefault(
                place.code, RechargeGroup(key=place.code, label=place.name_localized)
            )
            by_country[place.code].add(count=count, total=total, currency=currency)
    order = {code: index for index, code in enumerate(labels)}
    return PeriodRecharges(
        overall=overall,
        by_status=sorted(by_status.values(), key=lambda group: order.get(group.key, 99)),
        by_operator=sorted(by_operator.values(), key=lambda pair: (-pair[0].count, pair[0].label)),
        by_country=sorted(by_country.values(), key=lambda group: (-group.count, group.label)),
    )
