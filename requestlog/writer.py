"""The request log's writer process under gunicorn (docs/request-log.md).

Gunicorn's master starts one writer process before it forks its workers
(``gunicorn.conf.py``: ``on_starting`` and ``on_exit``). The workers inherit a bounded
queue to it: the writing thread of each worker (``requestlog.buffer``) hands its captures
over in batches instead of redacting and writing them itself, so neither the redaction nor
the ``COPY`` runs in a process whose request threads wait for its interpreter lock. A
worker whose batch does not fit (the writer is behind or gone) writes that batch itself, as
it does without a writer process (``make run``'s runserver, tests): nothing is dropped for
want of a writer.

This module is imported by gunicorn's master before Django is set up: Django is imported in
the writer process only.
"""

from __future__ import annotations

import contextlib
import logging
import multiprocessing
import os
import queue as queues
import select
import signal
from typing import Any

logger = logging.getLogger(__name__)

# Set in the master before the fork; the workers inherit it. None: no writer process.
handoff: Any = None  # multiprocessing.Queue of lists of Capture, then None to stop
_pid: int | None = None
_exited = -1  # the master's end of a pipe the writer holds open while it runs

QUEUE_BATCHES = 200  # batches waiting at most (each up to the buffer's wake_at captures)
APPLICATION_NAME = "reseller-requestlog-writer"  # its PostgreSQL connection, as others see it


def wanted() -> bool:
    """A writer process unless the log is off or REQUEST_LOG_WRITER_PROCESS says no (read
    from the environment: the master has no Django settings)."""
    off = ("0", "false", "no", "off")
    return (
        os.environ.get("REQUEST_LOG_ENABLED", "true").strip().lower() not in off
        and os.environ.get("REQUEST_LOG_WRITER_PROCESS", "true").strip().lower() not in off
    )


def start() -> None:
    """In gunicorn's master, before the workers fork. A plain fork, not a
    ``multiprocessing.Process``: the workers are forked from the master too, and would
    inherit a Process they are not the parent of (and try to join it at exit)."""
    global handoff, _pid, _exited
    if not wanted() or _pid is not None:
        return
    handoff = multiprocessing.get_context("fork").Queue(maxsize=QUEUE_BATCHES)
    _exited, held = os.pipe()  # readable (end of file) once the writer has exited
    master = os.getpid()
    pid = os.fork()
    if pid == 0:  # the writer
        os.close(_exited)
        code = 0
        try:
            _main(handoff, master)
        except BaseException:
            logger.exception("request log writer: stopped by an error")
            code = 1
        finally:
            os._exit(code)
    os.close(held)
    # Only the writer reads. Without the master's (and so the workers') read end, a batch put
    # after the writer is gone fails at once instead of filling a pipe nobody empties.
    handoff._reader.close()
    _pid = pid


def stop(timeout: float = 15.0) -> None:
    """In gunicorn's master at exit, after the workers handed over what they held. The
    master reaps the process itself (its SIGCHLD handler): wait for the pipe to close."""
    global _pid
    if _pid is None:
        return
    if not running():  # it died: nothing to ask (a put would only break on the closed pipe)
        _pid = None
        return
    try:
        handoff.put(None, timeout=timeout)
    except Exception:  # a full queue: stop it anyway
        logger.warning("request log writer: could not ask it to stop", exc_info=True)
    ready, _, _ = select.select([_exited], [], [], timeout)
    if not ready:
        logger.warning("request log writer: still writing after %s s, stopped", timeout)
        with contextlib.suppress(ProcessLookupError):
            os.kill(_pid, signal.SIGKILL)
    _pid = None


def running() -> bool:
    """Whether the writer process is still there (its end of the ``_exited`` pipe is open)."""
    if handoff is None:
        return False
    poller = select.poll()
    poller.register(_exited, select.POLLIN)
    return not poller.poll(0)


def hand_over(captures: list) -> bool:
    """In a worker: give a batch to the writer process; False if there is none (any more:
    it died) or it is full. The caller then writes the batch itself."""
    if not captures or not running():
        return False
    try:
        handoff.put_nowait(captures)
    except Exception:  # queue.Full, or a queue closed under us
        return False
    return True


def _main(queue, master: int) -> None:
    """The writer process: write each batch handed over until told to stop, or until the
    master is gone (killed before it could say so: its workers go with it)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the master stops it, after its workers
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "reseller.settings.production")
    import django

    django.setup()
    from django.db import close_old_connections, connection

    from requestlog.services import api_requests_record

    def connect() -> None:
        close_old_connections()
        if connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                name = "SELECT set_config('application_name', %s, false)"
                cursor.execute(name, [APPLICATION_NAME])

    connected = False
    while True:
        try:
            batch = queue.get(timeout=1.0)
        except queues.Empty:
            if os.getppid() != master:
                break
            continue
        except Exception:  # a stream cut by a worker killed mid-write: nothing more can be read
            logger.exception("request log writer: the hand-over broke; the workers write")
            break
        if batch is None:
            break
        try:
            if not connected or connection.connection is None:
                connect()
                connected = True
            api_requests_record(captures=batch)
        except Exception as exc:
            connected = False
            logger.warning(
                "request log: %d requests not written (%s: %s)",
                len(batch),
                type(exc).__name__,
                str(exc)[:200],
            )
    connection.close()
