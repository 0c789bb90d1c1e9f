"""Idempotency-Key handling built on a unique constraint (docs/contract.md section 5).

1. Claim: INSERT (account, mode, key) in its own short transaction. The database lets exactly
   one request in; the others find the row and get the stored answer (replay), 409 while the
   first still runs, or 422 if their body differs.
2. Run: the operation and the storing of its answer share one transaction, fenced by the
   claim's token. Either the order and its stored answer commit together or neither does.
3. A refusal raised by the operation (402, 400 on the body) is stored too, so a replay answers
   the same; an unexpected failure releases the key, since nothing was committed.
A claim left behind by a crashed process is taken over after IDEMPOTENCY_LEASE_SECONDS; the
token fence makes that safe even if the first process is merely slow.
"""

from __future__ import annotations

import hashlib
import json
import re
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import IntegrityError, connection, transaction
from django.db.models import Func
from django.utils import timezone

from accounts.models import Account
from orders.errors import (
    IdempotencyKeyInUse,
    IdempotencyKeyInvalid,
    IdempotencyKeyRequired,
    IdempotencyKeyReused,
)
from orders.models import IdempotencyRecord
from reseller.errors import ApplicationError

KEY_PATTERN = re.compile(r"^[\x21-\x7e]{1,255}$")
RETENTION = timedelta(hours=24)


@dataclass(frozen=True)
class Outcome:
    status: int
    body: dict[str, Any]
    replayed: bool
    is_problem: bool = False


def read_key(raw: str | None, *, required: bool) -> str | None:
    if raw is None or raw == "":
        if required:
            raise IdempotencyKeyRequired()
        return None
    if not KEY_PATTERN.match(raw):
        raise IdempotencyKeyInvalid()
    return raw


def fingerprint(*, method: str, path: str, body: Any) -> str:
    canonical = json.dumps(body, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(f"{method} {path}\n{canonical}".encode()).hexdigest()


def _lease() -> timedelta:
    return timedelta(seconds=settings.IDEMPOTENCY_LEASE_SECONDS)


def _holder() -> dict[str, Any]:
    """This request's database session, recorded with a claim (PostgreSQL only)."""
    if connection.vendor != "postgresql":
        return {}
    return {
        "holder_pid": Func(function="pg_backend_pid"),
        "holder_since": Func(function="pg_postmaster_start_time"),
    }


def _holder_gone(record: IdempotencyRecord) -> bool:
    """True when the session that claimed ``record`` no longer exists: the request died with
    its connection, or PostgreSQL restarted since. Such a claim is dead, whatever its lease."""
    if connection.vendor != "postgresql" or record.holder_pid is None:
        return False
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pg_postmaster_start_time() <> %s"
            " OR NOT EXISTS (SELECT 1 FROM pg_stat_activity WHERE pid = %s)",
            [record.holder_since, record.holder_pid],
        )
        return bool(cursor.fetchone()[0])


def _claim(
    *, account: Account, livemode: bool, key: str, print_: str
) -> IdempotencyRecord | Outcome:
    now = timezone.now()
    for _attempt in range(3):
        try:
            with transaction.atomic():
                return IdempotencyRecord.objects.create(
                    account=account,
                    livemode=livemode,
                    key=key,
                    fingerprint=print_,
                    created_at=now,
                    claimed_at=now,
                    **_holder(),
                )
        except IntegrityError:
            pass
        existing = IdempotencyRecord.objects.filter(
            account=account, livemode=livemode, key=key
        ).first()
        if existing is None:
            continue  # expired and deleted meanwhile: claim again
        if existing.created_at < now - RETENTION:
            IdempotencyRecord.objects.filter(pk=existing.pk, token=existing.token).delete()
            continue
        if existing.fingerprint != print_:
            raise IdempotencyKeyReused()
        if existing.state == IdempotencyRecord.State.DONE:
            body = existing.response_body or {}
            return Outcome(
                status=existing.response_status or 200,
                body=body,
                replayed=True,
                is_problem=(existing.response_status or 200) >= 400,
            )
        if existing.claimed_at < now - _lease() or _holder_gone(existing):
            token = uuid.uuid4()
            taken = IdempotencyRecord.objects.filter(
                pk=existing.pk, token=existing.token, state=IdempotencyRecord.State.IN_PROGRESS
            ).update(token=token, claimed_at=now, **_holder())
            if taken:
                existing.token = token
                return existing
            continue
        raise IdempotencyKeyInUse()
    raise IdempotencyKeyInUse()


def _store(record: IdempotencyRecord, *, status: int, body: dict[str, Any]) -> bool:
    return bool(
        IdempotencyRecord.objects.filter(
            pk=record.pk, token=record.token, state=IdempotencyRecord.State.IN_PROGRESS
        ).update(state=IdempotencyRecord.State.DONE, response_status=status, response_body=body)
    )


def run_idempotent(
    *,
    account: Account,
    livemode: bool,
    key: str | None,
    request_fingerprint: str,
    operation: Callable[[], tuple[int, dict[str, Any]]],
    request_id: str | None = None,
) -> Outcome:
    """Run ``operation`` at most once per key; it returns (status, body) or raises."""
    if key is None:
        with transaction.atomic():
            status, body = operation()
        return Outcome(status=status, body=body, replayed=False)

    claimed = _claim(account=account, livemode=livemode, key=key, print_=request_fingerprint)
    if isinstance(claimed, Outcome):
        return claimed
    record = claimed
    try:
        with transaction.atomic():
            status, body = operation()
            if not _store(record, status=status, body=body):
                raise IdempotencyKeyInUse()  # our claim was taken over: roll everything back
    except IdempotencyKeyInUse:
        raise
    except ApplicationError as exc:
        body = exc.as_problem(request_id=request_id)
        _store(record, status=exc.status, body=body)
        raise
    except BaseException:
        IdempotencyRecord.objects.filter(pk=record.pk, token=record.token).delete()
        raise
    return Outcome(status=status, body=body, replayed=False)


def purge_expired() -> int:
    deleted, _ = IdempotencyRecord.objects.filter(
        created_at__lt=timezone.now() - RETENTION
    ).delete()
    return deleted
