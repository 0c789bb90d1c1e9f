"""Idempotency-Key handling, the mechanism (contract section 5, docs/orders.md
"Idempotency-Key"): an operation runs at most once per key of an account and mode.

Each app whose requests take a key keeps their stored answers in a table of its own (orders:
``orders.IdempotencyRecord``; network: ``network.TransferKey``), a ``StoredAnswer`` (the
columns ``account``, ``livemode``, ``key``, ``fingerprint``, ``response_status``,
``response_body``, ``created_at``) with a unique constraint on (account, livemode, key); the
mechanism below takes that model as ``records``. It lives here, below every app, so that an
app lower than orders (network's transfers) runs keys the same way.

One transaction does it all: it takes the key, runs the operation and stores its answer.

1. Take the key: on PostgreSQL a transaction-scoped advisory lock on (account, mode, key),
   tried without waiting, then the stored answer is read (on the embedded default, SQLite in
   one process, a claim of this process taken before the transaction: SQLite would make the
   second request wait for the first's commit and replay it). A lock
   held by another request means that request still runs: 409. A stored answer is replayed
   (or 422 when the body differs); a key another table holds (an order's key sent to a
   transfer) is 422 too: one key names one request of an account and mode.
2. Run the operation and insert its answer in the same transaction: the operation and its
   stored answer commit together or not at all. The unique constraint on (account, mode,
   key) is the last word: a request that ran anyway (a snapshot taken just before another
   commit) fails its insert, rolls back everything it did, and replays the stored answer.
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
from functools import cache
from typing import Any

from django.apps import apps
from django.db import IntegrityError, models, transaction
from django.db.models import Value
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from reseller.db import advisory_key, advisory_xact_lock, process_claim
from reseller.errors import ApplicationError

KEY_PATTERN = re.compile(r"^[\x21-\x7e]{1,255}$")
RETENTION = timedelta(hours=24)


class StoredAnswer(models.Model):
    """The columns of a table of stored answers (``Keys.records``): one Idempotency-Key of one
    account and mode, and the answer its request got, kept ``RETENTION``. A concrete table
    adds its own unique constraint on (account, livemode, key), named for its app."""

    account = models.ForeignKey(
        "accounts.Account", on_delete=models.CASCADE, related_name="+", verbose_name=_("account")
    )
    livemode = models.BooleanField(_("live mode"))
    key = models.CharField(_("key"), max_length=255)
    fingerprint = models.CharField(
        _("fingerprint"), max_length=64, help_text=_("SHA-256 of method, path and body")
    )
    response_status = models.PositiveSmallIntegerField(_("response status"))
    response_body = models.JSONField(_("response body"))
    created_at = models.DateTimeField(_("created at"), default=timezone.now, db_index=True)

    class Meta:
        abstract = True

    def __str__(self) -> str:
        return f"{self.key} ({self.response_status})"


@cache
def _answer_tables() -> tuple[type[StoredAnswer], ...]:
    """Every table of stored answers (the apps' ``StoredAnswer`` models), found once."""
    return tuple(model for model in apps.get_models() if issubclass(model, StoredAnswer))


class IdempotencyKeyRequired(ApplicationError):
    code = "idempotency_key_required"
    status = 400
    title = _("Idempotency-Key required")
    default_detail = _("Send an Idempotency-Key header (1 to 255 characters), unique per order.")


class IdempotencyKeyInvalid(ApplicationError):
    code = "validation_error"
    status = 400
    title = _("Validation error")
    default_detail = _("The Idempotency-Key header must be 1 to 255 printable characters.")


class IdempotencyKeyInUse(ApplicationError):
    code = "idempotency_key_in_use"
    status = 409
    title = _("Conflict")
    default_detail = _(
        "A request with this Idempotency-Key is still being processed. Retry in a moment."
    )


class IdempotencyKeyReused(ApplicationError):
    code = "idempotency_key_reused"
    status = 422
    title = _("Unprocessable request")
    default_detail = _(
        "This Idempotency-Key was already used with a different request body. "
        "Use a new key for a new order."
    )


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
    """The advisory lock of one key of one account and mode: a signed 64-bit number (the
    same for every table: a key runs one request at a time, whichever app answers it)."""
    return advisory_key("idempotency", account_id, int(livemode), key)


def _same(value: Any) -> Any:
    return value


@dataclass(frozen=True)
class Keys:
    """One app's stored answers: its ``records`` model, and how a body is stored
    (``seal``) and read back (``open``), e.g. to keep a PIN encrypted at rest."""

    records: type[StoredAnswer]
    seal: Callable[[Any], Any] = _same
    open: Callable[[Any], Any] = _same

    def _take(self, *, account, livemode: bool, key: str, lock: int):
        """Inside the transaction: take the key (409 if another request holds it) and return
        the answer stored for it, if any. On PostgreSQL the key is held with a
        transaction-level advisory lock on ``lock`` (its ``lock_id``; the ORM has none); on the
        embedded default (SQLite, one process) ``run`` held it before the transaction
        (``process_claim``)."""
        if not advisory_xact_lock(lock):
            raise IdempotencyKeyInUse()
        scope: dict[str, Any] = {"account": account, "livemode": livemode, "key": key}
        since = timezone.now() - RETENTION
        # One query reads this table's answer and whether another table holds the key: a
        # key names one request of an account and mode whichever endpoint answers it, so a
        # key an order used is a different request on a transfer (422), as it is between two
        # order endpoints.
        # Every table's columns are StoredAnswer's, in its order: the union lines them up.
        columns = [field.attname for field in self.records._meta.concrete_fields]
        own = self._stored(**scope).annotate(here=Value(True)).values(*columns, "here")
        others = [
            model._default_manager.filter(**scope, created_at__gte=since)
            .annotate(here=Value(False))
            .values(*columns, "here")
            for model in _answer_tables()
            if model is not self.records
        ]
        rows = list(own.union(*others, all=True) if others else own)
        for row in rows:
            if row.pop("here"):
                return self.records(**row)
        if rows:
            raise IdempotencyKeyReused()
        return None

    def _stored(self, **scope):
        return self.records._default_manager.filter(**scope)

    def _replay(self, stored, *, print_: str) -> IdempotentReply:
        if stored.fingerprint != print_:
            raise IdempotencyKeyReused()
        status = stored.response_status
        return IdempotentReply(
            status=status,
            body=self.open(stored.response_body),
            replayed=True,
            is_problem=status >= 400,
        )

    def _store(self, *, account, livemode: bool, key: str, print_: str, status: int, body):
        """Every request with a key ends here."""
        self.records._default_manager.create(
            account=account,
            livemode=livemode,
            key=key,
            fingerprint=print_,
            response_status=status,
            response_body=self.seal(body),
            created_at=timezone.now(),
        )

    def run(
        self,
        *,
        account,
        livemode: bool,
        key: str | None,
        request_fingerprint: str,
        operation: Callable[[], tuple[int, dict[str, Any]]],
        request_id: str | None = None,
        on_refusal: Callable[[ApplicationError], None] | None = None,
    ) -> IdempotentReply:
        """Run ``operation`` at most once per key; it returns (status, body) or raises.
        ``on_refusal`` may add to a refusal's detail before it is stored and raised."""
        if key is None:
            with transaction.atomic():
                status, body = operation()
            return IdempotentReply(status=status, body=body, replayed=False)
        scope: dict[str, Any] = {"account": account, "livemode": livemode, "key": key}
        lock = lock_id(account_id=account.pk, livemode=livemode, key=key)
        with process_claim(lock) as free:
            if not free:  # the embedded default: another thread runs this key now
                raise IdempotencyKeyInUse()
            return self._run_claimed(
                scope,
                lock,
                request_fingerprint,
                operation,
                request_id=request_id,
                on_refusal=on_refusal,
            )

    def _run_claimed(
        self,
        scope: dict[str, Any],
        lock: int,
        request_fingerprint: str,
        operation: Callable[[], tuple[int, dict[str, Any]]],
        *,
        request_id: str | None,
        on_refusal: Callable[[ApplicationError], None] | None,
    ) -> IdempotentReply:
        try:
            with transaction.atomic():
                stored = self._take(**scope, lock=lock)
                if stored is not None and stored.created_at >= timezone.now() - RETENTION:
                    return self._replay(stored, print_=request_fingerprint)
                if stored is not None:  # older than the retention: the key is free again
                    self._stored(**scope).delete()
                status, body = operation()
                self._store(**scope, print_=request_fingerprint, status=status, body=body)
        except (IdempotencyKeyInUse, IdempotencyKeyReused):
            raise
        except IntegrityError:
            # Another request stored this key while this one ran: everything here rolled
            # back. Replay its answer; an IntegrityError of the operation itself goes on up.
            record = self._stored(**scope).first()
            if record is None:
                raise
            return self._replay(record, print_=request_fingerprint)
        except ApplicationError as exc:
            if on_refusal is not None:
                on_refusal(exc)
            self._store_refusal(
                **scope, lock=lock, print_=request_fingerprint, exc=exc, request_id=request_id
            )
            raise
        return IdempotentReply(status=status, body=body, replayed=False)

    def _store_refusal(
        self,
        *,
        account,
        livemode: bool,
        key: str,
        lock: int,
        print_: str,
        exc: ApplicationError,
        request_id,
    ) -> None:
        """Store the operation's refusal (its transaction rolled back) unless another request
        stored an answer for the key meanwhile."""
        scope: dict[str, Any] = {"account": account, "livemode": livemode, "key": key}
        try:
            with transaction.atomic():
                advisory_xact_lock(lock, wait=True)
                if not self._stored(**scope).exists():
                    self._store(
                        **scope,
                        print_=print_,
                        status=exc.status,
                        body=exc.as_problem(request_id=request_id),
                    )
        except IntegrityError:
            pass  # stored meanwhile by another request: its answer is the key's

    def purge_expired(self) -> int:
        deleted, _kinds = self.records._default_manager.filter(
            created_at__lt=timezone.now() - RETENTION
        ).delete()
        return deleted
