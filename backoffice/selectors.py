"""Reads for the back office: the summary, the staff lists and the dashboard's series.

Every function runs a fixed number of queries whatever the data (aggregates and annotations,
never a query per row), so the lists and the dashboard stay fast as the tables grow.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime, time, timedelta
from decimal import Decimal

from django.db.models import (
    Count,
    DecimalField,
    OuterRef,
    Q,
    QuerySet,
    Subquery,
    Sum,
    Value,
)
from django.db.models.functions import Coalesce, TruncDate
from django.utils import timezone

from accounts.models import Account, ApiKey, User
from books.selectors import margin_report
from catalog.models import Country, Operator, Product
from payments.models import Payment
from recharges.models import Recharge
from recharges.state import LIVE_FINAL, LIVE_STATUSES
from reseller.money import ZERO, quantize
from wallet.models import TopUp, Wallet

MONEY_OUT = DecimalField(max_digits=14, decimal_places=2)
# Payments that took money (a refund later does not undo the sale; it is shown beside it).
SOLD = (
    Payment.Status.CAPTURED,
    Payment.Status.REFUNDED,
    Payment.Status.PARTIALLY_REFUNDED,
)
# The statuses of live recharges (docs/contract.md §5); sandbox rows have their own.
WINDOWS = (("today", 0), ("last_7_days", 7), ("last_30_days", 30))


def start_of_today() -> datetime:
    """Midnight of today in the project's time zone (the dashboard's day boundary)."""
    return timezone.make_aware(datetime.combine(timezone.localdate(), time.min))


def window_start(days: int) -> datetime:
    """``days`` = 0 is today; 7 is today and the six days before it."""
    return start_of_today() - timedelta(days=max(days - 1, 0))


def _totals(rows, amount_key: str = "amount") -> list[dict]:
    return [
        {"currency": row["currency"], "amount": quantize(row[amount_key] or ZERO)}
        for row in rows
        if row["currency"]
    ]


def summary() -> dict:
    """The figures of GET /admin/summary (docs/backoffice.md). Live data only, except the
    user and key counts; money is grouped by currency because accounts may hold different ones.
    """
    since_30 = window_start(30)
    payments = Payment.objects.filter(livemode=True, status__in=SOLD, created_at__gte=since_30)
    recharges = Recharge.objects.filter(livemode=True, created_at__gte=since_30)

    payment_agg = {}
    recharge_agg = {}
    for name, days in WINDOWS:
        since = window_start(days)
        payment_agg[f"{name}_count"] = Count("id", filter=Q(created_at__gte=since))
        payment_agg[f"{name}_amount"] = Sum("amount", filter=Q(created_at__gte=since))  # type: ignore[assignment]
        payment_agg[f"{name}_refunded"] = Sum("refunded_amount", filter=Q(created_at__gte=since))  # type: ignore[assignment]
        recharge_agg[f"{name}_count"] = Count("id", filter=Q(created_at__gte=since))
        recharge_agg[f"{name}_amount"] = Sum("amount", filter=Q(created_at__gte=since))  # type: ignore[assignment]
    payment_rows = list(payments.values("currency").annotate(**payment_agg).order_by("currency"))
    recharge_rows = list(recharges.values("currency").annotate(**recharge_agg).order_by("currency"))

    def windowed(rows, *, refunded: bool) -> dict:
        out = {}
        for name, _days in WINDOWS:
            entry = {
                "count": sum(row[f"{name}_count"] for row in rows),
                "totals": [
                    {"currency": row["currency"], "amount": quantize(row[f"{name}_amount"] or ZERO)}
                    for row in rows
                    if row[f"{name}_count"]
                ],
            }
            if refunded:
                entry["refunded"] = [
                    {
                        "currency": row["currency"],
                        "amount": quantize(row[f"{name}_refunded"] or ZERO),
                    }
                    for row in rows
                    if row[f"{name}_count"]
                ]
            out[name] = entry
        return out

    by_status: dict[str, int] = dict.fromkeys(LIVE_STATUSES, 0)
    for row in (
        Recharge.objects.filter(livemode=True, created_at__gte=since_30, status__in=LIVE_STATUSES)
        .values("status")
        .annotate(n=Count("id"))
        .order_by()
    ):
        by_status[row["status"]] = row["n"]
    finished = by_status[Recharge.Status.DELIVERED] + by_status[Recharge.Status.FAILED]
    success_rate = round(by_status[Recharge.Status.DELIVERED] / finished, 4) if finished else None

    people = User.objects.aggregate(
        total=Count("id"),
        active=Count("id", filter=Q(is_active=True)),
        staff=Count("id", filter=Q(is_staff=True)),
        new_last_30_days=Count("id", filter=Q(date_joined__gte=since_30)),
    )
    accounts = Account.objects.aggregate(total=Count("id"), b2b=Count("id", filter=Q(is_b2b=True)))
    keys = ApiKey.objects.filter(revoked_at__isnull=True).aggregate(
        active=Count("id"),
        live=Count("id", filter=Q(mode="live")),
        test=Count("id", filter=Q(mode="test")),
    )
    float_rows = (
        Wallet.objects.filter(kind=Wallet.Kind.LIVE)
        .values("currency")
        .annotate(amount=Sum("balance"), wallets=Count("id"))
        .order_by("currency")
    )
    pending_rows = list(
        TopUp.objects.filter(status=TopUp.Status.PENDING, method=TopUp.Method.BANK_TRANSFER)
        .values("currency")
        .annotate(amount=Sum("amount"), n=Count("id"))
        .order_by("currency")
    )
    return {
        "generated_at": timezone.now(),
        "users": people,
        "accounts": accounts,
        "api_keys": keys,
        "payments": windowed(payment_rows, refunded=True),
        "recharges": windowed(recharge_rows, refunded=False),
        "recharges_by_status": by_status,
        "success_rate": success_rate,
        "wallet_float": _totals(float_rows),
        "pending_bank_topups": {
            "count": sum(row["n"] for row in pending_rows),
            "totals": _totals(pending_rows),
        },
    }


# Lists ------------------------------------------------------------------------------------------


def _created_range(qs: QuerySet, *, created_from: datetime | None, created_to: datetime | None):
    if created_from is not None:
        qs = qs.filter(created_at__gte=created_from)
    if created_to is not None:
        qs = qs.filter(created_at__lt=created_to)
    return qs


def users_list(*, q: str = "", is_b2b: bool | None = None, is_staff: bool | None = None):
    live_balance = Wallet.objects.filter(account=OuterRef("account_id"), kind=Wallet.Kind.LIVE)
    qs = (
        User.objects.select_related("account")
        .annotate(
            active_keys=Count(
                "account__api_keys",
                filter=Q(account__api_keys__revoked_at__isnull=True),
                distinct=True,
            ),
            wallet_balance=Subquery(live_balance.values("balance")[:1]),
            wallet_currency=Subquery(live_balance.values("currency")[:1]),
        )
        .order_by("-id")
    )
    if q:
        qs = qs.filter(
            Q(email__icontains=q)
            | Q(first_name__icontains=q)
            | Q(last_name__icontains=q)
            | Q(account__name__icontains=q)
            | Q(public_id=q)
        )
    if is_b2b is not None:
        qs = qs.filter(account__is_b2b=is_b2b)
    if is_staff is not None:
        qs = qs.filter(is_staff=is_staff)
    return qs


def recharges_list(
    *,
    status: list[str] | None = None,
    account: str = "",
    operator: str = "",
    country: str = "",
    created_from: datetime | None = None,
    created_to: datetime | None = None,
    livemode: bool | None = None,
    recipient_number: str = "",
) -> QuerySet[Recharge]:
    qs = Recharge.objects.select_related(
        "account", "order", "payment", "product__operator", "product__country"
    ).order_by("-id")
    if status:
        qs = qs.filter(status__in=status)
    if account:
        qs = qs.filter(account__public_id=account)
    if operator:
        qs = qs.filter(product__operator__public_id=operator)
    if country:
        qs = qs.filter(product__country__code=country.upper())
    if livemode is not None:
        qs = qs.filter(livemode=livemode)
    if recipient_number:
        qs = qs.filter(recipient_number=recipient_number)
    return _created_range(qs, created_from=created_from, created_to=created_to)


def payments_list(
    *,
    status: list[str] | None = None,
    method: str = "",
    account: str = "",
    currency: str = "",
    created_from: datetime | None = None,
    created_to: datetime | None = None,
    livemode: bool | None = None,
) -> QuerySet[Payment]:
    qs = (
        Payment.objects.select_related("account", "order")
        .annotate(recharge_count=Count("recharges"))
        .order_by("-id")
    )
    if status:
        qs = qs.filter(status__in=status)
    if method:
        qs = qs.filter(method=method)
    if account:
        qs = qs.filter(account__public_id=account)
    if currency:
        qs = qs.filter(currency=currency.upper())
    if livemode is not None:
        qs = qs.filter(livemode=livemode)
    return _created_range(qs, created_from=created_from, created_to=created_to)


def products_list(
    *,
    q: str = "",
    country: str = "",
    operator: str = "",
    active: bool | None = None,
    offered: bool | None = None,
) -> QuerySet[Product]:
    since = window_start(30)
    qs = (
        Product.objects.select_related("operator", "country")
        .annotate(
            recharges_last_30_days=Subquery(
                Recharge.objects.filter(
                    product=OuterRef("pk"), livemode=True, created_at__gte=since
                )
                .order_by()
                .values("product")
                .annotate(n=Count("id"))
                .values("n")[:1]
            )
        )
        .order_by("country__code", "operator__name", "retail_price", "id")
    )
    if q:
        qs = qs.filter(Q(name__icontains=q) | Q(sku__icontains=q) | Q(public_id=q))
    if country:
        qs = qs.filter(country__code=country.upper())
    if operator:
        qs = qs.filter(operator__public_id=operator)
    if active is not None:
        qs = qs.filter(active=active)
    if offered is not None:
        qs = qs.filter(offered=offered)
    return qs


# Dashboard --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class DayPoint:
    day: date
    sales: Decimal
    delivered: int
    failed: int
    other: int

    @property
    def recharges(self) -> int:
        return self.delivered + self.failed + self.other


def dashboard(*, days: int = 30, currency: str = "EUR", top: int = 8) -> dict:
    """Series for the staff dashboard: live data of the last ``days`` days (today included)."""
    since = window_start(days)
    first_day = timezone.localdate() - timedelta(days=days - 1)
    tz = timezone.get_current_timezone()

    sales = {
        row["day"]: row["amount"] or ZERO
        for row in Payment.objects.filter(
            livemode=True, status__in=SOLD, created_at__gte=since, currency=currency
        )
        .annotate(day=TruncDate("created_at", tzinfo=tz))
        .values("day")
        .annotate(amount=Sum("amount"))
        .order_by()
    }
    recharges_by_day: dict[date, dict[str, int]] = {}
    for row in (
        Recharge.objects.filter(livemode=True, created_at__gte=since)
        .annotate(day=TruncDate("created_at", tzinfo=tz))
        .values("day", "status")
        .annotate(n=Count("id"))
        .order_by()
    ):
        recharges_by_day.setdefault(row["day"], {})[row["status"]] = row["n"]

    series = []
    for offset in range(days):
        day = first_day + timedelta(days=offset)
        counts = recharges_by_day.get(day, {})
        delivered = counts.get(Recharge.Status.DELIVERED, 0)
        failed = counts.get(Recharge.Status.FAILED, 0)
        series.append(
            DayPoint(
                day=day,
                sales=quantize(sales.get(day, ZERO)),
                delivered=delivered,
                failed=failed,
                other=sum(counts.values()) - delivered - failed,
            )
        )

    by_status: dict[str, int] = dict.fromkeys(LIVE_STATUSES, 0)
    for point_counts in recharges_by_day.values():
        for status, n in point_counts.items():
            if status in by_status:
                by_status[status] += n

    operators = list(
        Recharge.objects.filter(livemode=True, created_at__gte=since)
        .values("product__operator__name", "product__operator__country_id")
        .annotate(
            delivered=Count("id", filter=Q(status=Recharge.Status.DELIVERED)),
            failed=Count("id", filter=Q(status=Recharge.Status.FAILED)),
            finished=Count("id", filter=Q(status__in=LIVE_FINAL)),
        )
        .filter(finished__gt=0)
        .order_by("-finished", "product__operator__name")[:top]
    )
    operator_rates = [
        {
            "name": row["product__operator__name"],
            "country": row["product__operator__country_id"],
            "delivered": row["delivered"],
            "failed": row["failed"],
            "rate": row["delivered"] / (row["delivered"] + row["failed"]),
        }
        for row in operators
    ]
    countries = list(
        Recharge.objects.filter(livemode=True, created_at__gte=since)
        .values("product__country__code", "product__country__name")
        .annotate(
            n=Count("id"),
            amount=Coalesce(
                Sum("amount", filter=Q(currency=currency)), Value(ZERO), output_field=MONEY_OUT
            ),
        )
        .order_by("-n", "product__country__code")[:top]
    )
    top_countries = [
        {
            "code": row["product__country__code"],
            "name": row["product__country__name"],
            "recharges": row["n"],
            "amount": quantize(row["amount"]),
        }
        for row in countries
    ]
    return {
        "days": days,
        "currency": currency,
        "series": series,
        "sales_total": quantize(sum((p.sales for p in series), ZERO)),
        "recharges_total": sum(p.recharges for p in series),
        "by_status": by_status,
        "operators": operator_rates,
        "countries": top_countries,
        "summary": summary(),
    }


# -- the margin page (docs/books.md): the books grouped, with names for the keys ----------------
MARGIN_PERIODS = (7, 30, 90, 365)


def margin_rows(*, by: str, days: int) -> list[dict]:
    """The books' margin report over the last ``days`` days, grouped ``by`` (day, provider,
    operator, country, reseller), each row with a readable ``label`` and its margin percent."""
    since = timezone.now() - timedelta(days=days)
    rows = margin_report(by=by, since=since)
    keys = {row["key"] for row in rows}
    names: dict = {}
    if by == "operator":
        names = {o.pk: f"{o.name} ({o.country_id})" for o in Operator.objects.filter(pk__in=keys)}
    elif by == "country":
        names = dict(Country.objects.filter(pk__in=keys).values_list("code", "name"))
    elif by == "reseller":
        names = dict(Account.objects.filter(pk__in=keys).values_list("pk", "name"))
    for row in rows:
        key = row["key"]
        row["label"] = names.get(key, key if key not in (None, "") else "—")
        row["margin_percent"] = (
            (row["margin"] / row["revenue"] * 100).quantize(Decimal("0.1"))
            if row["revenue"]
            else None
        )
        for field in ("revenue", "cost", "margin"):
            row[field] = quantize(row[field])
    return rows


def margin_by_day(*, days: int, currency: str) -> dict[date, tuple[Decimal, Decimal]]:
    """Cost and margin per day booked (in ``currency``, the dashboard's) over ``days`` days."""
    since = timezone.now() - timedelta(days=days)
    return {
        row["key"]: (quantize(row["cost"]), quantize(row["margin"]))
        for row in margin_report(by="day", since=since)
        if row["currency"] == currency
    }
