"""The request log's periodic tasks (docs/request-log.md): what waits in Redis is written,
rows past the retention go."""

from __future__ import annotations

from celery import shared_task
from django.conf import settings

from requestlog import redisqueue
from requestlog.services import api_requests_prune


@shared_task(ignore_result=True)
def requestlog_drain_task() -> int:
    """Every second (beat): write the captures the web processes pushed onto the Redis list,
    in batches, at least once (requestlog.redisqueue). Nothing to do without Redis: the web
    processes then write the log themselves."""
    if not settings.REDIS_URL:
        return 0
    return redisqueue.drain()


@shared_task(ignore_result=True)
def requestlog_prune_task() -> int:
    """Every 10 minutes (beat): delete requests older than REQUEST_LOG_RETENTION_DAYS, in
    bounded batches."""
    return api_requests_prune(days=settings.REQUEST_LOG_RETENTION_DAYS)
