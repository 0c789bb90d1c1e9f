"""Enqueueing tasks, the same call for real workers and for the embedded default.

With CELERY_BROKER_URL set, ``enqueue`` publishes a message for the workers. Without one the
task runs in this process: inline (tests, ``TASKS_IN_PROCESS_THREADED=false``) or on a small
thread pool, with ``countdown`` and the periodic tasks kept by one clock thread, so ``make run``
answers requests at once and still delivers recharges in the background.
"""

from __future__ import annotations

import contextvars
import heapq
import itertools
import logging
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from functools import cache

from celery import shared_task
from django.conf import settings
from django.db import close_old_connections
from django.utils.module_loading import import_string

logger = logging.getLogger(__name__)

PUBLISH_RETRY = {"max_retries": 2, "interval_start": 0, "interval_step": 0.2, "interval_max": 0.5}


@cache
def _pool() -> ThreadPoolExecutor:
    return ThreadPoolExecutor(
        max_workers=settings.TASKS_IN_PROCESS_THREADS, thread_name_prefix="inprocess-task"
    )


def _run_in_thread(task, args: tuple) -> None:
    def run():
        _inline.set(False)  # a pool task's own tasks go to the pool (a countdown's context)
        close_old_connections()
        try:
            task.apply(args=args)
        except Exception:
            logger.exception("in-process task %s failed", task.name)
        finally:
            close_old_connections()

    # In the context of the caller (its request id, its trace), as a worker's task would be.
    _pool().submit(contextvars.copy_context().run, run)


class _Clock:
    """``make run``'s stand-in for a broker's countdowns and for beat: one thread that sleeps
    on a condition until the next task is due, or until a nearer one is added."""

    def __init__(self) -> None:
        self._due: list[tuple[float, int, Callable[[], None]]] = []
        self._order = itertools.count()  # equal times keep their order
        self._changed = threading.Condition()
        self._thread: threading.Thread | None = None

    def at(self, seconds: float, run: Callable[[], None]) -> None:
        """Call ``run`` (on the clock's thread: hand real work to the pool) in ``seconds``."""
        with self._changed:
            heapq.heappush(self._due, (time.monotonic() + seconds, next(self._order), run))
            if self._thread is None:
                self._thread = threading.Thread(target=self._loop, name="inprocess-clock")
                self._thread.daemon = True
                self._thread.start()
            self._changed.notify()

    def _loop(self) -> None:
        while True:
            with self._changed:
                while not self._due or self._due[0][0] > time.monotonic():
                    timeout = self._due[0][0] - time.monotonic() if self._due else None
                    self._changed.wait(timeout)
                _when, _order, run = heapq.heappop(self._due)
            try:
                run()
            except Exception:
                logger.exception("in-process clock: a scheduled call failed")


_clock = _Clock()


# Set by ``tasks_inline``: this context's in-process tasks run in its own thread.
_inline: contextvars.ContextVar[bool] = contextvars.ContextVar("tasks_inline", default=False)


@contextmanager
def tasks_inline() -> Iterator[None]:
    """Without a broker, the tasks this context starts run at once in its own thread, not on
    the pool: a management command's work is over when its command is (the mail its commit
    sends included), never left to threads that outlive its output. With a broker, nothing
    changes: the workers run them."""
    token = _inline.set(True)
    try:
        yield
    finally:
        _inline.reset(token)


def enqueue(task, *args, countdown: float | None = None) -> None:
    if not settings.CELERY_TASK_ALWAYS_EAGER:
        # Give up quickly when the broker is down: the sweeper re-enqueues what is left.
        task.apply_async(args=args, countdown=countdown, retry=True, retry_policy=PUBLISH_RETRY)
        return
    if not settings.TASKS_IN_PROCESS_THREADED or (_inline.get() and not countdown):
        task.apply(args=args)
        return
    if countdown:
        # Run later in the caller's context (its request id), as a worker's task would be.
        caller = contextvars.copy_context()
        _clock.at(countdown, lambda: caller.run(_run_in_thread, task, args))
    else:
        _run_in_thread(task, args)


_beat_started = False


def start_in_process_beat() -> None:
    """Without a broker there is no beat process: the clock runs the periodic tasks."""
    global _beat_started
    if _beat_started:
        return
    _beat_started = True
    for entry in settings.CELERY_BEAT_SCHEDULE.values():
        _beat(import_string(entry["task"]), float(entry["schedule"]), first=0.0)


def _beat(task, interval: float, *, first: float) -> None:
    def tick() -> None:
        _run_in_thread(task, ())
        _clock.at(interval, tick)

    _clock.at(first, tick)


@shared_task(ignore_result=True)
def noop_task() -> None:
    """Does nothing: the worker's floor in the benchmark (bench/run.py, docs/performance.md)."""
