"""The in-process buffer between the request and the request log (docs/request-log.md).

The request thread only appends a ``Capture`` to a bounded deque (no I/O, no lock on the way
in). A daemon thread of the same process wakes every second, or as soon as 500 wait, and
pushes what is waiting onto the Redis list a Celery task drains into the table
(``requestlog.redisqueue``): the web process never writes the log to the database. Without
Redis (the embedded ``make run``) the thread writes the rows itself, redaction included, on
its own database connection. When the buffer is full a capture is dropped and counted: the
request never waits for the log. At exit (a gunicorn worker's graceful stop) what is left is
pushed or written once more.

The thread starts with the first capture of a request that came through a WSGI server (its
environ names ``SERVER_SOFTWARE``: gunicorn, runserver). Django's test client names none, so
under tests nothing runs in the background and captures wait for ``flush()``.
"""

from __future__ import annotations

import atexit
import logging
import os
import threading
from collections import deque

from django.conf import settings
from django.db import close_old_connections, connections

from requestlog import redisqueue
from requestlog.models import new_api_request_id
from requestlog.services import Capture, api_requests_record

logger = logging.getLogger(__name__)


class RequestLogBuffer:
    def __init__(
        self,
        *,
        capacity: int = 5000,
        batch_size: int = 500,
        wake_at: int = 500,
        interval: float = 1.0,
    ):
        self.capacity = capacity
        self.batch_size = batch_size  # captures per RPUSH, or rows per write without Redis
        self.wake_at = wake_at  # captures waiting that wake the thread before its second
        self.interval = interval
        self._reset()

    def _reset(self) -> None:
        """A fresh state: at creation, and in a child process after fork (a thread does not
        survive a fork, and the parent's captures are the parent's to write)."""
        self._rows: deque[Capture] = deque()
        self._wake = threading.Event()
        self._stopping = threading.Event()
        self._lock = threading.Lock()  # the counters and the thread's start
        self._flush_lock = threading.Lock()  # one writer at a time: the thread or exit
        self._thread: threading.Thread | None = None
        self.dropped = 0
        self.written = 0  # pushed onto the Redis list, or written to the table without Redis
        self.failed = 0

    def __len__(self) -> int:
        return len(self._rows)

    def add(self, capture: Capture, *, background: bool = False) -> bool:
        """Queue one capture; False (and counted) when the buffer is full. Never blocks on
        I/O. ``background``: start the writing thread if it is not running yet."""
        if len(self._rows) >= self.capacity:
            with self._lock:
                self.dropped += 1
                dropped = self.dropped
            if dropped == 1 or dropped % 1000 == 0:
                logger.warning("request log buffer full: %d requests not logged so far", dropped)
            return False
        self._rows.append(capture)
        if background and self._thread is None:
            self._start()
        if len(self._rows) >= self.wake_at:
            self._wake.set()
        return True

    def clear(self) -> None:
        self._rows.clear()

    def flush(self) -> int:
        """Send everything waiting, a batch at a time, in the calling thread: pushed onto the
        Redis list when REDIS_URL is set, else written to the table. Returns how many this
        call sent. A batch Redis or the database refuses is dropped (logged and counted),
        never retried forever."""
        sent = 0
        with self._flush_lock:
            while self._rows:
                sent += self._send(self._take(self.batch_size))
        with self._lock:
            self.written += sent
        return sent

    def _take(self, most: int) -> list[Capture]:
        batch: list[Capture] = []
        while len(batch) < most:
            try:
                batch.append(self._rows.popleft())
            except IndexError:
                break
        return batch

    def _send(self, batch: list[Capture]) -> int:
        try:
            if settings.REDIS_URL:
                sent = redisqueue.push(batch)
                if sent < len(batch):
                    raise RuntimeError(f"{redisqueue.PENDING_MAX} requests already wait in Redis")
                return sent
            return api_requests_record(
                captures=[(new_api_request_id(), capture) for capture in batch]
            )
        except Exception as exc:
            with self._lock:
                self.failed += len(batch)
            logger.warning(
                "request log: %d requests not written (%s: %s)",
                len(batch),
                type(exc).__name__,
                str(exc)[:200],
            )
            return 0

    # -- the writing thread ----------------------------------------------------------------
    def _start(self) -> None:
        with self._lock:
            if self._thread is not None:
                return
            self._thread = threading.Thread(target=self._run, name="request-log", daemon=True)
            self._thread.start()
        atexit.register(self._flush_at_exit)

    def _run(self) -> None:
        idle = 0
        while not self._stopping.is_set():
            self._wake.wait(self.interval)
            self._wake.clear()
            if self._rows:
                idle = 0
                self._write()
            else:
                idle += 1
                if idle == 5:  # quiet for a while: hold no database connection
                    connections.close_all()
        self._write()
        connections.close_all()

    def _write(self) -> None:
        close_old_connections()  # past CONN_MAX_AGE, or broken: a new one
        try:
            self.flush()
        except Exception:  # the thread must outlive any surprise
            logger.exception("request log: flush failed")
        close_old_connections()

    def stop(self, timeout: float = 10.0) -> None:
        """Send what is waiting and end the thread (at exit the captures are sent anyway;
        for tests, which must not leave a connection open)."""
        thread = self._thread
        if thread is None:
            return
        self._stopping.set()
        self._wake.set()
        thread.join(timeout)
        with self._lock:
            self._thread = None
            self._stopping.clear()

    def _flush_at_exit(self) -> None:
        try:
            self.flush()
        except Exception:
            logger.exception("request log: flush at exit failed")


buffer = RequestLogBuffer()
os.register_at_fork(after_in_child=buffer._reset)
