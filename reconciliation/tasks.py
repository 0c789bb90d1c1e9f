"""The daily reconciliation of every provider that keeps a transaction report (beat)."""

from __future__ import annotations

import logging
from datetime import UTC, timedelta

from celery import shared_task
from django.utils import timezone

from reconciliation.services import RECONCILABLE, reconciliation_run
from upstreams.adapters import ProviderError
from upstreams.models import Provider

logger = logging.getLogger(__name__)


@shared_task(ignore_result=True)
def reconciliation_daily_task() -> dict[str, str]:
    """Once a day (beat): yesterday (UTC) of each enabled provider with a report. Safe to
    run twice: a second run of a day is another run, and a reversal is applied once."""
    yesterday = timezone.now().astimezone(UTC).date() - timedelta(days=1)
    lines: dict[str, str] = {}
    for provider in Provider.objects.filter(enabled=True, kind__in=RECONCILABLE):
        try:
            lines[provider.name] = reconciliation_run(provider=provider, day=yesterday).line()
        except ProviderError as exc:
            logger.warning("%s not reconciled for %s: %s", provider.name, yesterday, exc)
    return lines
