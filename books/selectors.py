"""Reading the books (docs/books.md): the margin report, provider floats, and what the check
(``check_books``) compares with the recharges."""

from __future__ import annotations

from collections import defaultdict
from datetime import datetime
from decimal import Decimal
from typing import Any

from django.db.models import Count, Q, Sum
from django.db.models.functions import TruncDate

from books.models import AMOUNT, Entry
from reseller.db import exact_sum

L, K = Entry.Ledger, Entry.Kind

# What a margin report can be grouped by, and the column of the lines it reads.
GROUPS = {
    "day": "day",
    "provider": "provider",
    "operator": "operator_id",
    "country": "country",
    "reseller": "customer_id",
}


def margin_report(
    *, by: str, since: datetime | None = None, until: datetime | None = None
) -> list[dict[str, Any]]:
    """Revenue, cost and margin of the sales booked in ``[since, until)``, grouped ``by`` one
    of ``GROUPS`` and by the sales' currency; reversals count against the day they were booked.
    Rows: ``key``, ``currency``, ``sales`` (sales less reversals), ``revenue``, ``cost``,
    ``margin`` (revenue less cost), sorted by key then currency."""
    column = GROUPS[by]
    lines = Entry.objects.filter(ledger__in=(L.REVENUE, L.COST_OF_SALES))
    if since is not None:
        lines = lines.filter(booked_at__gte=since)
    if until is not None:
        lines = lines.filter(booked_at__lt=until)
    if by == "day":
        lines = lines.annotate(day=TruncDate("booked_at"))
    rows = (
        lines.values(column, "reporting_currency")
        .annotate(
            revenue=Sum("reporting_amount", filter=Q(ledger=L.REVENUE)),
            cost=Sum("reporting_amount", filter=Q(ledger=L.COST_OF_SALES)),
            sold=Count("id", filter=Q(ledger=L.REVENUE, kind=K.SALE)),
            reversed=Count("id", filter=Q(ledger=L.REVENUE, kind=K.REVERSAL)),
        )
        .order_by(column, "reporting_currency")
    )
    report = []
    for row in rows:
        revenue = -(row["revenue"] or Decimal(0))  # revenue lines are credits
        cost = row["cost"] or Decimal(0)
        report.append(
            {
                "key": row[column],
                "currency": row["reporting_currency"],
                "sales": row["sold"] - row["reversed"],
                "revenue": revenue,
                "cost": cost,
                "margin": revenue - cost,
            }
        )
    return report


def provider_floats() -> dict[str, dict[str, Decimal]]:
    """Each provider's float by currency: funded less the costs of its deliveries, plus the
    costs it returned with reversals."""
    floats: dict[str, dict[str, Decimal]] = defaultdict(dict)
    for row in (
        Entry.objects.filter(ledger=L.PROVIDER_FLOAT)
        .values("provider", "currency")
        .annotate(total=Sum("amount"))
        .order_by("provider", "currency")
    ):
        floats[row["provider"]][row["currency"]] = row["total"]
    return dict(floats)


def journals_unbalanced() -> list[tuple[str, str, Decimal]]:
    """(journal, currency, sum) of every journal whose lines do not sum to zero."""
    return [
        (row["journal"], row["currency"], row["total"])
        for row in Entry.objects.values("journal", "currency")
        .annotate(total=exact_sum("amount", places=AMOUNT["decimal_places"]))
        .exclude(total=0)
        .order_by("journal", "currency")
    ]


# The kinds of lines that are about a recharge (a sale, its cost, its reversal).
SALE_KINDS = (K.SALE, K.COST, K.REVERSAL)
DISPUTE_KINDS = (K.DISPUTE, K.DISPUTE_FEE)


def books_of_sales(references: list[str]) -> dict[str, dict[tuple[str, str], Entry]]:
    """For each recharge reference, its lines by (kind, ledger)."""
    found: dict[str, dict[tuple[str, str], Entry]] = defaultdict(dict)
    for line in Entry.objects.filter(reference__in=references, kind__in=SALE_KINDS):
        found[line.reference][(line.kind, line.ledger)] = line
    return dict(found)


def references_booked() -> set[str]:
    """Every recharge reference that has lines in the books (sales, costs, reversals)."""
    return set(
        Entry.objects.filter(kind__in=SALE_KINDS)
        .exclude(reference="")
        .values_list("reference", flat=True)
        .distinct()
    )


def dispute_lines() -> dict[str, dict[str, Entry]]:
    """Every dispute journal (``dispute:…``, ``dispute_fee:…``): its lines by ledger."""
    found: dict[str, dict[str, Entry]] = defaultdict(dict)
    for line in Entry.objects.filter(kind__in=DISPUTE_KINDS).order_by("pk"):
        found[line.journal][line.ledger] = line
    return dict(found)
