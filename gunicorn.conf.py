"""Gunicorn's request limits, read from the environment (docs/security.md).

Gunicorn loads ./gunicorn.conf.py by itself when started from the repository root (the
Dockerfile, docker-compose and the README's commands do). The body size is Django's
DATA_UPLOAD_MAX_MEMORY_SIZE (413 request_too_large); gunicorn bounds what comes before it and
answers 400 itself when a request line or header is over its limit.

Metrics (reseller/metrics.py): with PROMETHEUS_MULTIPROC_DIR, each worker writes its values to
files of that directory; when one exits, prometheus_client is told so that the gauges it
kept there (none of ours, but a library's may) stop counting it. Its counters stay: totals.
"""

import os

from prometheus_client import multiprocess

limit_request_line = int(os.environ.get("GUNICORN_LIMIT_REQUEST_LINE", "4094"))
limit_request_fields = int(os.environ.get("GUNICORN_LIMIT_REQUEST_FIELDS", "100"))
limit_request_field_size = int(os.environ.get("GUNICORN_LIMIT_REQUEST_FIELD_SIZE", "8190"))


def on_starting(server):
    """Refuse to start where PINs could not be kept encrypted (catalog/checks.py): no
    FIELD_ENCRYPTION_KEY while a PIN product exists, DEBUG off."""
    import io

    import django
    from django.core.management import call_command

    django.setup()
    call_command("check", tags=["field_encryption"], databases=["default"], stdout=io.StringIO())


def child_exit(server, worker):
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        multiprocess.mark_process_dead(worker.pid)
