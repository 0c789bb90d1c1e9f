"""The request log's periodic task: rows past the retention go (docs/request-log.md)."""

from __future__ import annotations

from celery import shared_task
from django.conf import settings

from requestlog.services import api_requests_prune


@shared_task(ignore_result=True)
def requestlog_prune_task() -> int:
    """Every 10 minutes (beat): delete requests older than REQUEST_LOG_RETENTION_DAYS, in
    bounded batches."""
    return api_requests_prune(days=settings.REQUEST_LOG_RETENTION_DAYS)
