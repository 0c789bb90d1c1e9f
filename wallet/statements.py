"""Statements (docs/contract.md §13): a wallet's ledger entries of a period, with its opening
and closing balance and totals, as JSON, CSV or XLSX. CSV and XLSX stream: a million entries
never sit in memory."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from decimal import Decimal
from typing import Any

from django.db.models import Count, Q, Sum
from django.utils import timezone
from django.utils.translation import gettext as _

from reseller.errors import ValidationFailed
from reseller.exports import csv_safe
from reseller.money import ZERO
from wallet.models import LedgerEntry, Wallet

FORMATS = ("json", "csv", "xlsx")
COLUMNS = [
    "created_at",
    "kind",
    "reference",
    "amount",
    "currency",
    "balance_after",
    "memo",
    "entry_id",
]
JSON_MAX_ENTRIES = 10_000  # past it, the JSON answer says so: CSV and XLSX have no limit


@dataclass(frozen=True)
class Period:
    start: date
    end: date  # inclusive

    @property
    def since(self) -> datetime:
        return datetime.combine(self.start, time.min, tzinfo=UTC)

    @property
    def until(self) -> datetime:  # exclusive
        return datetime.combine(self.end + timedelta(days=1), time.min, tzinfo=UTC)


def _invalid(field: str, message: str) -> ValidationFailed:
    return ValidationFailed(
        fields=[{"field": field, "code": "invalid", "message": message}],
    )


def period_parse(*, start: str | None, end: str | None, today: date | None = None) -> Period:
    """``from``/``to`` as YYYY-MM-DD (UTC days, both included); this month so far by default."""
    today = today or timezone.now().date()
    values: dict[str, date] = {}
    for field, raw, default in (
        ("from", start, today.replace(day=1)),
        ("to", end, today),
    ):
        if raw in (None, ""):
            values[field] = default
            continue
        try:
            values[field] = date.fromisoformat(str(raw))
        except ValueError:
            raise _invalid(field, _("Use a date as YYYY-MM-DD.")) from None
        if len(str(raw)) != 10 or values[field] >= date.max:  # the day after must exist
            raise _invalid(field, _("Use a date as YYYY-MM-DD."))
    if values["from"] > values["to"]:
        raise _invalid("from", _("The period starts after it ends."))
    return Period(start=values["from"], end=values["to"])


def statement_entries(*, wallet: Wallet, period: Period):
    return LedgerEntry.objects.filter(
        wallet=wallet, created_at__gte=period.since, created_at__lt=period.until
    ).order_by("created_at", "id")


def statement_summary(*, wallet: Wallet, period: Period) -> dict[str, Any]:
    """Opening and closing balance, credits, debits and the number of entries (three indexed
    reads, whatever the size of the ledger)."""
    before = (
        LedgerEntry.objects.filter(wallet=wallet, created_at__lt=period.since)
        .order_by("-created_at", "-id")
        .values_list("balance_after", flat=True)
        .first()
    )
    opening = before if before is not None else ZERO
    totals = statement_entries(wallet=wallet, period=period).aggregate(
        credits=Sum("amount", filter=Q(amount__gt=0)),
        debits=Sum("amount", filter=Q(amount__lt=0)),
        count=Count("id"),
    )
    credits: Decimal = totals["credits"] or ZERO
    debits: Decimal = totals["debits"] or ZERO
    return {
        "from": period.start.isoformat(),
        "to": period.end.isoformat(),
        "currency": wallet.currency,
        "livemode": wallet.livemode,
        "opening_balance": opening,
        "credits": credits,
        "debits": debits,
        "closing_balance": opening + credits + debits,
        "count": totals["count"],
    }


def _when(value: datetime) -> str:
    return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def statement_rows(*, wallet: Wallet, period: Period, escape: bool = True) -> Iterator[list[Any]]:
    """The entries as rows of COLUMNS, read in chunks; for a file (``escape``) text cells that
    would start a formula get a leading quote."""
    safe = csv_safe if escape else (lambda value: value)
    rows = (
        statement_entries(wallet=wallet, period=period)
        .values_list(
            "created_at",
            "kind",
            "reference",
            "amount",
            "currency",
            "balance_after",
            "memo",
            "public_id",
        )
        .iterator(chunk_size=2000)
    )
    for created_at, kind, reference, amount, currency, balance_after, memo, entry_id in rows:
        yield [
            _when(created_at),
            kind,
            safe(reference),
            amount,  # a Decimal of two places: "-15.00" in CSV, a number in XLSX
            currency,
            balance_after,
            safe(memo),
            entry_id,
        ]


def statement_json(*, wallet: Wallet, period: Period) -> dict[str, Any]:
    summary = statement_summary(wallet=wallet, period=period)
    entries: list[dict[str, Any]] = []
    for row in statement_rows(wallet=wallet, period=period, escape=False):
        if len(entries) == JSON_MAX_ENTRIES:
            break
        entry = dict(zip(COLUMNS, row, strict=True))
        entries.append({k: f"{v:.2f}" if isinstance(v, Decimal) else v for k, v in entry.items()})
    return {
        "object": "statement",
        **{
            key: (f"{value:.2f}" if isinstance(value, Decimal) else value)
            for key, value in summary.items()
        },
        "has_more": summary["count"] > len(entries),
        "data": entries,
    }
