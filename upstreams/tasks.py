"""Beat tasks of upstream providers: their catalogs and their balances, read again."""

from __future__ import annotations

import logging

from celery import shared_task

from upstreams.adapters import ProviderError
from upstreams.models import Provider
from upstreams.services import catalog_sync, provider_balance_refresh

logger = logging.getLogger(__name__)


@shared_task(ignore_result=True)
def providers_sync_task() -> dict[str, str]:
    """Every PROVIDER_SYNC_INTERVAL_SECONDS (beat): each enabled provider's catalog."""
    lines: dict[str, str] = {}
    for provider in Provider.objects.filter(enabled=True):
        try:
            lines[provider.name] = catalog_sync(provider=provider).line()
        except ProviderError as exc:
            logger.warning("catalog of %s not synced: %s", provider.name, exc)
    return lines


@shared_task(ignore_result=True)
def providers_balance_task() -> int:
    """Every minute (beat): each enabled provider's balance (an email when it runs low)."""
    providers = list(Provider.objects.filter(enabled=True))
    for provider in providers:
        provider_balance_refresh(provider=provider)
    return len(providers)
