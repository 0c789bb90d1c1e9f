"""Log lines that say which request caused them: the request id of the request being answered,
or of the request whose work a Celery task does (it travels in the task's headers:
reseller/celery.py), and one JSON object per line with ``LOG_FORMAT=json``
(docs/operations.md, "Logs").

The id lives in a context variable: set by ``RequestIdMiddleware`` for a request, by the
worker for a task, and read by every log line, by the task a request or a task enqueues, and
by a webhook delivery's log lines.
"""

from __future__ import annotations

import contextvars
import logging
import time
from collections.abc import Iterator
from contextlib import contextmanager

from celery import current_task
from pythonjsonlogger.json import JsonFormatter as _JsonFormatter

NO_REQUEST = "-"
# The Celery message header that carries the id from the publisher to the worker.
TASK_HEADER = "request_id"

_request_id: contextvars.ContextVar[str] = contextvars.ContextVar("request_id", default=NO_REQUEST)


def current_request_id() -> str:
    return _request_id.get()


def request_id_set(request_id: str | None) -> contextvars.Token[str]:
    return _request_id.set(request_id or NO_REQUEST)


def request_id_reset(token: contextvars.Token[str]) -> None:
    _request_id.reset(token)


@contextmanager
def request_id_bound(request_id: str | None) -> Iterator[None]:
    token = request_id_set(request_id)
    try:
        yield
    finally:
        request_id_reset(token)


class RequestIdLogFilter(logging.Filter):
    """Puts ``request_id`` on every record (``-`` outside a request and its tasks), and in a
    Celery task its name and id."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.request_id = _request_id.get()
        task = current_task
        if task and getattr(task, "request", None) is not None and task.request.id:
            record.task_id = task.request.id
            record.task_name = task.name
        return True


class JsonFormatter(_JsonFormatter):
    """One JSON object per line: time (UTC, ISO 8601), level, logger, message, request_id, the
    task's name and id in a task, anything passed with ``extra=``, and the traceback."""

    def __init__(self, *args, **kwargs) -> None:
        kwargs.setdefault(
            "fmt",
            ["asctime", "levelname", "name", "message", "request_id", "process", "threadName"],
        )
        kwargs.setdefault(
            "rename_fields",
            {"asctime": "time", "levelname": "level", "name": "logger", "threadName": "thread"},
        )
        kwargs.setdefault("datefmt", "%Y-%m-%dT%H:%M:%S")
        kwargs.setdefault("json_ensure_ascii", False)
        super().__init__(*args, **kwargs)

    def formatTime(self, record: logging.LogRecord, datefmt: str | None = None) -> str:
        seconds = time.strftime(datefmt or "%Y-%m-%dT%H:%M:%S", time.gmtime(record.created))
        return f"{seconds}.{int(record.msecs):03d}Z"


def handlers_to_json(logger: logging.Logger) -> None:
    """Turn the handlers Celery gave a logger to JSON lines with the request id (the worker's
    own log setup, which replaces Django's LOGGING on the root logger)."""
    for handler in logger.handlers:
        handler.setFormatter(JsonFormatter())
        if not any(isinstance(f, RequestIdLogFilter) for f in handler.filters):
            handler.addFilter(RequestIdLogFilter())
