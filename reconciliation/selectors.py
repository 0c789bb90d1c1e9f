"""Reads of reconciliation runs (the admin API and the back office)."""

from __future__ import annotations

from datetime import date

from django.db.models import Prefetch, QuerySet

from reconciliation.models import ReconciliationItem, ReconciliationRun


def runs_list(*, provider: str = "", day: date | None = None) -> QuerySet[ReconciliationRun]:
    """Runs, newest first, each with its items (one query for all of a page's items)."""
    runs = ReconciliationRun.objects.order_by("-started_at", "-id").prefetch_related(
        Prefetch(
            "items",
            queryset=ReconciliationItem.objects.select_related("recharge").order_by("id"),
        )
    )
    if provider:
        runs = runs.filter(provider=provider)
    if day is not None:
        runs = runs.filter(day=day)
    return runs
