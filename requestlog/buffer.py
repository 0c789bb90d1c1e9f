"""The in-process buffer between the request and the request log (docs/request-log.md).

The request thread only appends a ``Capture`` to a bounded deque (no I/O, no lock on the way
in). A daemon thread of the same process wakes every second, or as soon as 500 wait, and
hands what is waiting to gunicorn's writer process (``requestlog.writer``), which redacts
and writes it. Without one (runserver, tests) or when it is full, the thread writes itself,
25 rows per statement, on its own database connection, redaction included; it gives the
interpreter lock away between rows, so a request thread coming back from the database never
waits long for it. When the buffer is full a capture is dropped and counted: the request
never waits for the log. At exit (a gunicorn worker's graceful stop) what is left is handed
over or written once more.

The thread starts with the first capture of a request that came through a WSGI server (its
environ names ``SERVER_SOFTWARE``: gunicorn, runserver). Django's test client names none, so
under tests nothing runs in the background and captures wait for ``flush()``.
"""

from __future__ import annotations

import atexit
import logging
import os
import threading
import time
from collections import deque

from django.db import close_old_connections, connections

from requestlog import writer
from requestlog.services import Capture, api_requests_record

logger = logging.getLogger(__name__)

HANDOVER_BATCH = 250  # captures per batch handed to the writer process


class RequestLogBuffer:
    def __init__(
        self,
        *,
        capacity: int = 5000,
        batch_size: int = 25,
        wake_at: int = 500,
        interval: float = 1.0,
    ):
        self.capacity = capacity
        self.batch_size = batch_size  # rows per INSERT
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
        self.written = 0
        self.handed_over = 0
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
        """Write everything waiting: handed to the writer process when gunicorn runs one
        (``requestlog.writer``), else (or when it is full) written here, a batch per
        statement, in the calling thread. Returns how many rows this thread wrote. A batch
        the database refuses is dropped (logged and counted), never retried forever."""
        written = 0
        handed = 0
        with self._flush_lock:
            while self._rows:
                batch = self._take(HANDOVER_BATCH if writer.handoff is not None else 0)
                if writer.hand_over(batch):
                    handed += len(batch)
                    continue
                for start in range(0, len(batch), self.batch_size):
                    written += self._record(batch[start : start + self.batch_size])
                    time.sleep(0)  # hand the interpreter lock to waiting request threads
        with self._lock:
            self.written += written
            self.handed_over += handed
        return written

    def _take(self, most: int) -> list[Capture]:
        batch: list[Capture] = []
        while len(batch) < (most or self.batch_size):
            try:
                batch.append(self._rows.popleft())
            except IndexError:
                break
        return batch

    def _record(self, batch: list[Capture]) -> int:
        try:
            return api_requests_record(captures=batch)
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
        """Write what is waiting and end the thread (at exit the captures are written anyway;
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
