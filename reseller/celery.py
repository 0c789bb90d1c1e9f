"""The Celery app. With no CELERY_BROKER_URL, settings make every task run in-process."""

import os

from celery import Celery
from celery.signals import task_postrun, task_prerun

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "reseller.settings.local")

app = Celery("reseller")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


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
