"""Idempotency-Key handling (docs/orders.md, "Idempotency-Key"): at most once per key.

One transaction does it all: it takes the key, runs the operation and stores its answer.

1. Take the key: on PostgreSQL a transaction-scoped advisory lock on (account, mode, key),
   tried without waiting, then the stored answer is read. A lock
   held by another request means that request still runs: 409. A stored answer is replayed
   (or 422 when the body differs).
2. Run the operation and insert its answer in the same transaction: the order and its stored
   answer commit together or not at all. The unique constraint on (account, mode, key) is
   the last word: a request that ran anyway (a snapshot taken just before another commit)
   fails its insert, rolls back everything it did, and replays the stored answer.
3. A refusal raised by the operation (402, 400 on the body) is stored too, so a replay
   answers the same; an unexpected failure stores nothing, since nothing was committed.
A request that dies takes its lock with its transaction: no claim is ever left behind.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.db import IntegrityError, transaction
from django.utils import timezone
from django.utils.translation import gettext as _

from accounts.models import Account
from orders.errors import (
    IdempotencyKeyInUse,
    IdempotencyKeyInvalid,
    IdempotencyKeyRequired,
    IdempotencyKeyReused,
)
from orders.models import IdempotencyRecord
from reseller import crypto
from reseller.db import advisory_xact_lock
from reseller.errors import ApplicationError
from wallet.errors import InsufficientBalance

KEY_PATTERN = re.compile(r"^[\x21-\x7e]{1,255}$")
RETENTION = timedelta(hours=24)


@dataclass(frozen=True)
class IdempotentReply:
    """The answer of an operation run at most once per Idempotency-Key: its status and body,
    and whether it is the stored answer of an earlier request (``Idempotent-Replayed``)."""

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


def lock_id(*, account_id: int, livemode: bool, key: str) -> int:
    """The advisory lock of one key of one account and mode: a signed 64-bit number."""
    digest = hashlib.sha256(f"idempotency:{account_id}:{int(livemode)}:{key}".encode()).digest()
    return int.from_bytes(digest[:8], "big", signed=True)


def _take(*, account: Account, livemode: bool, key: str) -> IdempotencyRecord | None:
    """Inside the transaction: take the key (409 if another request holds it) and return the
    answer stored for it, if any. On PostgreSQL the key is held with a transaction-level
    advisory lock (the ORM has none); SQLite runs one writing transaction at a time
    (BEGIN IMMEDIATE), so no other request holds the key while this one runs."""
    if not advisory_xact_lock(lock_id(account_id=account.pk, livemode=livemode, key=key)):
        raise IdempotencyKeyInUse()
    return IdempotencyRecord.objects.filter(account=account, livemode=livemode, key=key).first()


def _replay(stored: IdempotencyRecord, *, print_: str) -> IdempotentReply:
    if stored.fingerprint != print_:
        raise IdempotencyKeyReused()
    status = stored.response_status
    return IdempotentReply(
        status=status, body=pins_open(stored.response_body), replayed=True, is_problem=status >= 400
    )


# A stored answer never holds a PIN in clear (contract section 17). A live 201 has none (its
# recharges are delivered after it), but a test key's sandbox answer may show a simulated one:
# every non-null ``pin`` object is stored as ``{"sealed": <FIELD_ENCRYPTION_KEY token>}`` and
# opened when replayed.
SEALED = "sealed"


def pins_seal(value: Any) -> Any:
    if isinstance(value, dict):
        return {
            key: {SEALED: crypto.encrypt_json(item)}
            if key == "pin" and isinstance(item, dict)
            else pins_seal(item)
            for key, item in value.items()
        }
    if isinstance(value, list):
        return [pins_seal(item) for item in value]
    return value


def _is_sealed(item: Any) -> bool:
    return isinstance(item, dict) and set(item) == {SEALED}


def pins_open(value: Any, *, opener: Callable[[str], Any] = crypto.decrypt_json) -> Any:
    if isinstance(value, dict):
        return {
            key: opener(item[SEALED])
            if key == "pin" and _is_sealed(item)
            else pins_open(item, opener=opener)
            for key, item in value.items()
        }
    if isinstance(value, list):
        return [pins_open(item, opener=opener) for item in value]
    return value


def pins_rotate() -> int:
    """Re-encrypt the PINs of stored answers with the first key (rotate_field_encryption)."""
    rotated = 0
    for record in IdempotencyRecord.objects.filter(response_body__icontains=f'"{SEALED}"'):
        body = pins_open(record.response_body, opener=lambda token: {SEALED: crypto.rotate(token)})
        if body != record.response_body:
            record.response_body = body
            record.save(update_fields=["response_body"])
            rotated += 1
    return rotated


def _store(*, account: Account, livemode: bool, key: str, print_: str, status: int, body) -> None:
    """Every request with a key ends here."""
    IdempotencyRecord.objects.create(
        account=account,
        livemode=livemode,
        key=key,
        fingerprint=print_,
        response_status=status,
        response_body=pins_seal(body),
        created_at=timezone.now(),
    )


def run_idempotent(
    *,
    account: Account,
    livemode: bool,
    key: str | None,
    request_fingerprint: str,
    operation: Callable[[], tuple[int, dict[str, Any]]],
    request_id: str | None = None,
) -> IdempotentReply:
    """Run ``operation`` at most once per key; it returns (status, body) or raises."""
    if key is None:
        with transaction.atomic():
            status, body = operation()
        return IdempotentReply(status=status, body=body, replayed=False)
    scope: dict[str, Any] = {"account": account, "livemode": livemode, "key": key}
    try:
        with transaction.atomic():
            stored = _take(**scope)
            if stored is not None and stored.created_at >= timezone.now() - RETENTION:
                return _replay(stored, print_=request_fingerprint)
            if stored is not None:  # older than the retention: the key is free again
                IdempotencyRecord.objects.filter(**scope).delete()
            status, body = operation()
            _store(**scope, print_=request_fingerprint, status=status, body=body)
    except (IdempotencyKeyInUse, IdempotencyKeyReused):
        raise
    except IntegrityError:
        # Another request stored this key while this one ran: everything here rolled back.
        # Replay its answer; an IntegrityError of the operation itself goes on up.
        record = IdempotencyRecord.objects.filter(**scope).first()
        if record is None:
            raise
        return _replay(record, print_=request_fingerprint)
    except ApplicationError as exc:
        if isinstance(exc, InsufficientBalance):
            # Stored, this 402 is what the key answers for a day, even once the wallet is
            # funded: the refusal says so, first time and replayed (docs/orders.md).
            exc.detail += " " + _(
                "This Idempotency-Key keeps this answer for 24 hours: once the balance covers "
                "the order, send it again with a new Idempotency-Key."
            )
        _store_refusal(**scope, print_=request_fingerprint, exc=exc, request_id=request_id)
        raise
    return IdempotentReply(status=status, body=body, replayed=False)


def _store_refusal(
    *, account: Account, livemode: bool, key: str, print_: str, exc: ApplicationError, request_id
) -> None:
    """Store the operation's refusal (its transaction rolled back) unless another request
    stored an answer for the key meanwhile."""
    scope: dict[str, Any] = {"account": account, "livemode": livemode, "key": key}
    try:
        with transaction.atomic():
            advisory_xact_lock(
                lock_id(account_id=account.pk, livemode=livemode, key=key), wait=True
            )
            if not IdempotencyRecord.objects.filter(**scope).exists():
                _store(
                    **scope,
                    print_=print_,
                    status=exc.status,
                    body=exc.as_problem(request_id=request_id),
                )
    except IntegrityError:
        pass  # stored meanwhile by another request: its answer is the key's


def purge_expired() -> int:
    deleted, _ = IdempotencyRecord.objects.filter(
        created_at__lt=timezone.now() - RETENTION
    ).delete()
    return deleted
