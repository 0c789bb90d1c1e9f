"""The Celery app. With no CELERY_BROKER_URL, settings make every task run in-process."""

import logging
import os

from celery import Celery
from celery.signals import (
    after_setup_logger,
    after_setup_task_logger,
    before_task_publish,
    task_postrun,
    task_prerun,
    worker_init,
)
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

from reseller.dbconfig import database_for_worker, is_threaded
from reseller.logs import (
    NO_REQUEST,
    TASK_HEADER,
    current_request_id,
    handlers_to_json,
    request_id_set,
)
from reseller.tracing import tracing_start

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "reseller.settings.local")

app = Celery("reseller")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()

logger = logging.getLogger(__name__)


@task_prerun.connect
@task_postrun.connect
def _connections_recycle(sender=None, **kwargs) -> None:
    """Around every task a worker runs, what Django does around every request: drop a database
    connection that is broken or older than CONN_MAX_AGE, keep the others (CELERY_DB_REUSE_MAX
    stops the fix-up from closing them all). Tasks run in-process are left alone."""
    if sender is None or getattr(sender.request, "is_eager", False):
        return
    from django.db import close_old_connections

    close_old_connections()


@worker_init.connect
def _worker_database(sender=None, **kwargs) -> None:
    """Before the worker's first connection: a worker of many threads and no
    DATABASE_POOL_SIZE shares a pool sized from its concurrency; with DATABASE_POOL_SIZE=0 it
    refuses to start (reseller/dbconfig.py). Celery logs and ignores a receiver's exception,
    hence SystemExit."""
    concurrency = getattr(sender, "concurrency", None)
    threads = concurrency if isinstance(concurrency, int) else (os.cpu_count() or 1)
    if not is_threaded(getattr(sender, "pool_cls", "prefork") or "prefork"):
        return
    try:
        size = database_for_worker(
            settings.DATABASES["default"],
            threads=threads,
            pool_size=getattr(settings, "DATABASE_POOL_SIZE", None),
            timeout=getattr(settings, "DATABASE_POOL_TIMEOUT_SECONDS", 30.0),
        )
    except ImproperlyConfigured as refused:
        raise SystemExit(f"ImproperlyConfigured: {refused}") from refused
    if size is not None:
        logger.info("database: %d threads share a pool of %d connections", threads, size)


@worker_init.connect
def _worker_field_encryption(sender=None, **kwargs) -> None:
    """Refuse to start where PINs could not be kept encrypted (catalog/checks.py, run by its
    tag: this module names no app)."""
    import io

    import django
    from django.core.management import call_command
    from django.core.management.base import SystemCheckError

    django.setup()
    try:
        call_command(
            "check", tags=["field_encryption"], databases=["default"], stdout=io.StringIO()
        )
    except SystemCheckError as refused:
        raise SystemExit(str(refused)) from refused


@worker_init.connect
def _worker_tracing(sender=None, **kwargs) -> None:
    tracing_start("worker")


@after_setup_logger.connect
@after_setup_task_logger.connect
def _worker_logs(logger=None, **kwargs) -> None:
    """The worker replaces Django's handlers with its own; with LOG_FORMAT=json theirs write
    JSON lines with the request id too."""
    if logger is not None and getattr(settings, "LOG_FORMAT", "human") == "json":
        handlers_to_json(logger)


@before_task_publish.connect
def _request_id_publish(headers=None, **kwargs) -> None:
    """A task enqueued while answering a request (or by a task doing a request's work) carries
    that request's id."""
    request_id = current_request_id()
    if headers is not None and request_id != NO_REQUEST:
        headers.setdefault(TASK_HEADER, request_id)


@task_prerun.connect
def _request_id_run(task=None, **kwargs) -> None:
    """A worker's task logs with the id of the request that caused it (``-`` if none). A task
    run in-process keeps the id it inherited."""
    if task is None or getattr(task.request, "is_eager", False):
        return
    request_id = getattr(task.request, TASK_HEADER, None) or (
        (getattr(task.request, "headers", None) or {}).get(TASK_HEADER)
    )
    request_id_set(request_id if isinstance(request_id, str) else None)


@task_postrun.connect
def _request_id_done(task=None, **kwargs) -> None:
    if task is not None and not getattr(task.request, "is_eager", False):
        request_id_set(None)
