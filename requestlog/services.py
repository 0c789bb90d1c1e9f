"""Writing the request log: a batch of captured requests becomes rows (redacted here, off the
request path), a capture is encoded for its wait in Redis, and rows past the retention are
deleted in bounded batches."""

from __future__ import annotations

import json
import logging
import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from django.db import DataError, IntegrityError, connection, transaction
from django.utils import timezone

from requestlog.models import BODY_LIMIT, ApiRequest, new_api_request_id
from requestlog.redact import redact_body, redact_patterns, redact_text

# The head of each body the request thread hands over: redaction runs over all of it before
# the text is cut to BODY_LIMIT, so a secret across the cut is removed whole.
CAPTURE_LIMIT = 64 * 1024
logger = logging.getLogger(__name__)

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


def _row(public_id: str, capture: Capture) -> tuple:
    """A capture's row, redacted, in the order of _FIELDS."""
    return (
        public_id,
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
        datetime.fromtimestamp(capture.created, tz=UTC),
    )


# -- a capture as it waits in Redis (requestlog.redisqueue) --------------------------------------

_FORMAT = 1  # the first element of every encoded capture: a change of shape gets a new number


def _raw(head: bytes | None) -> str | None:
    # Bytes that are not UTF-8 survive JSON as escaped lone surrogates, and come back exact.
    return None if head is None else head.decode("utf-8", "surrogateescape")


def _unraw(text: str | None) -> bytes | None:
    return None if text is None else text.encode("utf-8", "surrogateescape")


def capture_encode(capture: Capture) -> bytes:
    """One capture as compact JSON, with the public id of its future row: a capture written
    twice (a drain interrupted after its write, docs/request-log.md) is then the same row."""
    c = capture
    values = [
        _FORMAT, new_api_request_id(), c.created, c.account_id, c.api_key_id, c.livemode,
        c.method, c.path, c.query, c.status, c.latency_ms, c.request_id, c.idempotency_key,
        _raw(c.request_head), c.request_bytes, c.request_type, _raw(c.response_head),
        c.response_bytes, c.response_type,
    ]  # fmt: skip
    return json.dumps(values, separators=(",", ":")).encode()


def capture_decode(data: bytes) -> tuple[str, Capture]:
    """The public id and the capture ``capture_encode`` made; ValueError if it is not one."""
    try:
        values = json.loads(data)
        if not isinstance(values, list) or values[0] != _FORMAT or len(values) != 19:
            raise ValueError("not an encoded capture")
        (
            _format, public_id, created, account_id, api_key_id, livemode, method, path, query,
            status, latency_ms, request_id, idempotency_key, request_head, request_bytes,
            request_type, response_head, response_bytes, response_type,
        ) = values  # fmt: skip
        capture = Capture(
            created=float(created), account_id=int(account_id), api_key_id=int(api_key_id),
            livemode=bool(livemode), method=str(method), path=str(path), query=str(query),
            status=int(status), latency_ms=int(latency_ms), request_id=str(request_id),
            idempotency_key=str(idempotency_key), request_head=_unraw(request_head) or b"",
            request_bytes=int(request_bytes), request_type=str(request_type),
            response_head=_unraw(response_head), response_bytes=int(response_bytes),
            response_type=str(response_type),
        )  # fmt: skip
    except (TypeError, IndexError, KeyError, AttributeError, UnicodeError) as exc:
        raise ValueError(f"not an encoded capture: {exc}") from exc
    return str(public_id), capture


# -- writing ------------------------------------------------------------------------------------


def _copy(rows: list[tuple]) -> None:
    column_of = {field.name: field.column for field in ApiRequest._meta.concrete_fields}
    columns = ", ".join(str(column_of[name]) for name in _FIELDS)
    statement = f"COPY {ApiRequest._meta.db_table} ({columns}) FROM STDIN"
    # COPY: the ORM has none, and it is half the CPU of an INSERT with parameters. psycopg's
    # own cursor: its errors become Django's (IntegrityError…) as the ORM's do.
    with (
        connection.cursor() as cursor,
        connection.wrap_database_errors,
        cursor.cursor.copy(statement) as copy,
    ):
        for row in rows:
            copy.write_row(row)


def _instances(rows: list[tuple]) -> list[ApiRequest]:
    names = [f"{name}_id" if name in ("account", "api_key") else name for name in _FIELDS]
    return [ApiRequest(**dict(zip(names, row, strict=True))) for row in rows]


def api_requests_record(*, captures: list[tuple[str, Capture]]) -> int:
    """Write captures (each with its row's public id) as rows, redacted here. PostgreSQL gets
    one ``COPY``, other databases (the embedded SQLite) one ``bulk_create``. If the database
    refuses the batch for what a row holds (a key deleted since, a row already written by an
    interrupted drain), the rows go one at a time: one already there is skipped, one refused
    is dropped and logged. An unreachable database raises: the caller keeps the batch.
    Returns how many rows are now written for these captures."""
    if not captures:
        return 0
    rows = [_row(public_id, capture) for public_id, capture in captures]
    try:
        with transaction.atomic():
            if connection.vendor == "postgresql":
                _copy(rows)
            else:
                ApiRequest.objects.bulk_create(_instances(rows))
        return len(rows)
    except (IntegrityError, DataError):
        pass
    written = 0
    for row in rows:
        try:
            with transaction.atomic():
                ApiRequest.objects.bulk_create(_instances([row]), ignore_conflicts=True)
            written += 1
        except (IntegrityError, DataError) as exc:
            logger.warning(
                "request log: a request of key %s not written (%s: %s)",
                row[2], type(exc).__name__, str(exc)[:200],
            )  # fmt: skip
    return written


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
