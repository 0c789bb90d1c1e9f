"""Idempotency-Key handling of orders and batches (docs/orders.md, "Idempotency-Key"): at
most once per key. The mechanism is ``reseller.idempotency`` (shared with the network's
transfers); here are the orders' table of answers, their PINs sealed at rest, and the hint a
stored 402 carries.

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

from collections.abc import Callable
from typing import Any

from django.utils.translation import gettext as _

from accounts.models import Account
from orders.models import IdempotencyRecord
from reseller import crypto
from reseller.errors import ApplicationError
from reseller.idempotency import RETENTION as RETENTION
from reseller.idempotency import IdempotentReply as IdempotentReply
from reseller.idempotency import Keys
from reseller.idempotency import fingerprint as fingerprint
from reseller.idempotency import lock_id as lock_id
from reseller.idempotency import read_key as read_key
from wallet.errors import InsufficientBalance

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


ORDER_KEYS = Keys(records=IdempotencyRecord, seal=pins_seal, open=pins_open)


def _funding_hint(exc: ApplicationError) -> None:
    if isinstance(exc, InsufficientBalance):
        # Stored, this 402 is what the key answers for a day, even once the wallet is
        # funded: the refusal says so, first time and replayed (docs/orders.md).
        exc.detail += " " + _(
            "This Idempotency-Key keeps this answer for 24 hours: once the balance covers "
            "the order, send it again with a new Idempotency-Key."
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
    return ORDER_KEYS.run(
        account=account,
        livemode=livemode,
        key=key,
        request_fingerprint=request_fingerprint,
        operation=operation,
        request_id=request_id,
        on_refusal=_funding_hint,
    )


def purge_expired() -> int:
    return ORDER_KEYS.purge_expired()
