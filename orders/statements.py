"""The recharges of a wallet statement's period (the statement page, ``site_pages.views``):
counted and summed by status, operator and country, with the filters the page offers."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal

from django.db.models import Count, QuerySet, Sum

from accounts.models import Account, ApiKey
from catalog.models import Country, Operator
from recharges.models import Recharge
from reseller.money import ZERO, quantize

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
