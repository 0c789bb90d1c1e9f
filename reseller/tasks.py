"""Enqueueing tasks, the same call for real workers and for the embedded default.

With CELERY_BROKER_URL set, ``enqueue`` publishes a message for the workers. Without one the
task runs in this process: inline (tests, ``TASKS_IN_PROCESS_THREADED=false``) or on a small
thread pool, with ``countdown`` honoured by a timer, so ``make run`` answers requests at once
and still delivers recharges in the background.
"""

from __future__ import annotations

import contextvars
import logging
import threading
from concurrent.futures import ThreadPoolExecutor
from functools import cache

from celery import shared_task
from django.conf import settings
from django.db import close_old_connections

logger = logging.getLogger(__name__)

PUBLISH_RETRY = {"max_retries": 2, "interval_start": 0, "interval_step": 0.2, "interval_max": 0.5}


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

    # In the context of the caller (its request id, its trace), as a worker's task would be.
    _pool().submit(contextvars.copy_context().run, run)


def enqueue(task, *args, countdown: float | None = None) -> None:
    if not settings.CELERY_TASK_ALWAYS_EAGER:
        # Give up quickly when the broker is down: the sweeper re-enqueues what is left.
        task.apply_async(args=args, countdown=countdown, retry=True, retry_policy=PUBLISH_RETRY)
        return
    if not settings.TASKS_IN_PROCESS_THREADED:
        task.apply(args=args)
        return
    if countdown:
        # The timer's thread starts with an empty context: it runs in the caller's.
        caller = contextvars.copy_context()
        timer = threading.Timer(countdown, caller.run, args=(_run_in_thread, task, args))
        timer.daemon = True
        timer.start()
    else:
        _run_in_thread(task, args)


_beat_started = False


def start_in_process_beat() -> None:
    """Without a broker there is no beat process: run the periodic tasks on a daemon thread."""
    global _beat_started
    if _beat_started:
        return
    _beat_started = True
    from django.utils.module_loading import import_string

    schedule = [
        (import_string(entry["task"]), float(entry["schedule"]))
        for entry in settings.CELERY_BEAT_SCHEDULE.values()
    ]

    def loop():
        import time

        due = {task.name: 0.0 for task, _interval in schedule}
        while True:
            now = time.monotonic()
            for task, interval in schedule:
                if now >= due[task.name]:
                    due[task.name] = now + interval
                    _run_in_thread(task, ())
            time.sleep(1)

    threading.Thread(target=loop, name="inprocess-beat", daemon=True).start()


@shared_task(ignore_result=True)
def noop_task() -> None:
    """Does nothing: the worker's floor in the benchmark (bench/run.py, docs/performance.md)."""
