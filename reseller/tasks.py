"""Enqueueing tasks, the same call for real workers and for the embedded default.

With CELERY_BROKER_URL set, ``enqueue`` publishes a message for the workers. Without one the
task runs in this process: inline (tests, ``TASKS_IN_PROCESS_THREADED=false``) or on a small
thread pool, with ``countdown`` honoured by a timer, so ``make run`` answers requests at once
and still delivers recharges in the background.
"""

from __future__ import annotations

import logging
import threading
from concurrent.futures import ThreadPoolExecutor
from functools import cache

from celery import shared_task
from django.conf import settings
from django.db import close_old_connections

logger = logging.getLogger(__name__)


@cache
def _pool() -> ThreadPoolExecutor:
    return ThreadPoolExecutor(max_workers=4, thread_name_prefix="inprocess-task")


def _run_in_thread(task, args: tuple) -> None:
    def run():
        close_old_connections()
        try:
            task.apply(args=args)
        except Exception:
            logger.exception("in-process task %s failed", task.name)
        finally:
            close_old_connections()

    _pool().submit(run)


def enqueue(task, *args, countdown: float | None = None) -> None:
    if not settings.CELERY_TASK_ALWAYS_EAGER:
        task.apply_async(args=args, countdown=countdown)
        return
    if not settings.TASKS_IN_PROCESS_THREADED:
        task.apply(args=args)
        return
    if countdown:
        timer = threading.Timer(countdown, _run_in_thread, args=(task, args))
        timer.daemon = True
        timer.start()
    else:
        _run_in_thread(task, args)


@shared_task(ignore_result=True)
def noop_task() -> None:
    """Does nothing: the worker's floor in the benchmark (bench/run.py, docs/performance.md)."""
