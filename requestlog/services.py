"""Writing the request log: a batch of captured requests becomes rows (redacted here, off the
request path), and rows past the retention are deleted in bounded batches."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from django.db import connection
from django.utils import timezone

from requestlog.models import BODY_LIMIT, ApiRequest, new_api_request_id
from requestlog.redact import redact_body, redact_patterns, redact_text

# The head of each body the request thread hands over: redaction runs over all of it before
# the text is cut to BODY_LIMIT, so a secret across the cut is removed whole.
CAPTURE_LIMIT = 64 * 1024
_TEXT_TYPES = ("json", "text/", "x-www-form-urlencoded", "xml", "javascript")


@dataclass(slots=True)
class Capture:
    """What the middleware takes from one request, as plain values: no redaction, no parsing."""

    created: float  # time.time() when the request arrived
    account_id: int
    api_key_id: int
    livemode: bool
    method: str
    path: str
    query: str
    status: int
    latency_ms: int
    request_id: str
    idempotency_key: str
    request_head: bytes
    request_bytes: int
    request_type: str
    response_head: bytes | None  # None: a streamed answer (a file), not kept
    response_bytes: int
    response_type: str


def _text(value: str) -> str:
    """PostgreSQL refuses NUL in text (one such body would lose the whole batch)."""
    return value.replace("\x00", "\ufffd") if "\x00" in value else value


def _body(head: bytes | None, *, size: int, content_type: str) -> str:
    if not size and not head:
        return ""
    if head is None:
        return f"[{size} bytes, streamed]" if size else "[streamed]"
    if content_type and not any(kind in content_type.lower() for kind in _TEXT_TYPES):
        return f"[{size} bytes, {content_type[:100]}]"
    return _text(redact_body(head, total=size, limit=BODY_LIMIT))


def _error_code(capture: Capture) -> str:
    if capture.status < 400 or not capture.response_head:
        return ""
    try:
        problem = json.loads(capture.response_head)
    except ValueError:
        return ""
    code = problem.get("code") if isinstance(problem, dict) else None
    return code[:64] if isinstance(code, str) else ""


# Every column of a row, in the order _row gives them.
_FIELDS = (
    "public_id", "account", "api_key", "livemode", "method", "path", "query", "status",
    "latency_ms", "request_id", "idempotency_key", "error_code", "request_body",
    "request_bytes", "response_body", "response_bytes", "created_at",
)  # fmt: skip


def _row(capture: Capture) -> tuple:
    """A capture's row, redacted, in the order of _FIELDS."""
    created_at = datetime.fromtimestamp(capture.created, tz=UTC)
    return (
        new_api_request_id(),
        capture.account_id,
        capture.api_key_id,
        capture.livemode,
        capture.method[:10],
        _text(redact_patterns(capture.path))[:500],
        _text(redact_text(capture.query))[:2000] if capture.query else "",
        capture.status,
        capture.latency_ms,
        capture.request_id[:128],
        _text(redact_patterns(capture.idempotency_key))[:255],
        _error_code(capture),
        _body(capture.request_head, size=capture.request_bytes, content_type=capture.request_type),
        capture.request_bytes,
        _body(
            capture.response_head, size=capture.response_bytes, content_type=capture.response_type
        ),
        capture.response_bytes,
        connection.ops.adapt_datetimefield_value(created_at),
    )


def api_requests_record(*, captures: list[Capture]) -> int:
    """Write a batch of captures as rows, in autocommit (nothing else shares its transaction).
    It runs beside the request threads of a web process, so it is lean: no model instances,
    and on PostgreSQL one ``COPY`` streaming the rows as they are redacted (half the CPU of an
    ``INSERT`` with parameters, docs/request-log.md); after each row the interpreter lock goes
    to any request thread waiting for it (``sleep(0)``). Other databases (the embedded SQLite)
    get one plain ``INSERT``.
    """
    if not captures:
        return 0
    column_of = {field.name: field.column for field in ApiRequest._meta.concrete_fields}
    columns = ", ".join(str(column_of[name]) for name in _FIELDS)
    table = ApiRequest._meta.db_table
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            with cursor.cursor.copy(f"COPY {table} ({columns}) FROM STDIN") as copy:
                for capture in captures:
                    copy.write_row(_row(capture))
                    time.sleep(0)
            return len(captures)
        rows = []
        for capture in captures:
            rows.append(_row(capture))
            time.sleep(0)
        one = "(" + ", ".join(["%s"] * len(_FIELDS)) + ")"
        cursor.execute(
            f"INSERT INTO {table} ({columns}) VALUES "  # noqa: S608 (names from the model; values are parameters)
            + ", ".join([one] * len(rows)),
            [value for row in rows for value in row],
        )
    return len(rows)


def api_requests_prune(*, days: int, batch_size: int = 5000, budget_seconds: float = 60.0) -> int:
    """Delete rows older than ``days``, oldest first, ``batch_size`` per statement, until none
    is left or ``budget_seconds`` are spent (beat comes back for the rest)."""
    cutoff = timezone.now() - timedelta(days=days)
    deadline = time.monotonic() + budget_seconds
    deleted = 0
    while True:
        oldest = (
            ApiRequest.objects.filter(created_at__lt=cutoff)
            .order_by("created_at")
            .values("pk")[:batch_size]
        )
        count, _by_model = ApiRequest.objects.filter(pk__in=oldest).delete()
        deleted += count
        if count < batch_size or time.monotonic() >= deadline:
            return deleted
