"""Group commit for the processor: the database work of many recharges in one transaction.

Each Celery thread still carries one recharge from its message to its end, and still calls
the provider itself (so 200 threads keep 200 calls in flight). What the threads of a process
share is the two writes around the call: the claim (``queued`` → ``dispatched``, committed
before the call, as in ``processor.recharge_process``) and the delivery (``dispatched`` →
``delivered``). A thread that arrives while another is writing waits; the next writer takes
every waiting recharge at once (up to ``RECHARGE_GROUP_COMMIT_MAX``) and writes them with a
handful of statements and one commit. Nobody waits for a batch to fill: alone, a recharge
is written at once, as a batch of one.

The guarantees are those of the one-at-a-time path, statement for statement:
- the claim is ``UPDATE … WHERE status = 'queued'`` under the rows' locks, so two copies of
  a recharge's task (or two processes) never both dispatch it, and ``dispatched`` is durable
  before any call;
- the delivery only moves rows still ``dispatched``, writes their history rows and their
  ``recharge.delivered`` events in the same transaction.
Anything off the common path (a waitlisting promotion, a test-mode row, a row already
dispatched, any answer but "delivered") goes through ``processor`` exactly as before.

PostgreSQL only (``unnest``, ``FOR UPDATE OF``); on SQLite, the embedded default with one
process, every recharge takes the one-at-a-time path.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

from catalog.models import Operator, Product
from catalog.selectors import product_waitlist_promotion, products_get
from orders.models import Recharge, RechargeEvent
from orders.recharges import processor, throttle
from orders.recharges.events import EVENT_OF_STATUS, recharges_emit
from orders.recharges.processor import Outcome
from orders.recharges.providers import ProviderResult, TopupRequest
from reseller.db import connection_release
from webhooks.outbox import subscribers_by_owner

S = Recharge.Status
logger = logging.getLogger(__name__)


class _Slot[Item, Result]:
    __slots__ = ("done", "error", "gate", "item", "result")

    def __init__(self, item: Item) -> None:
        self.item = item
        self.result: Result | None = None
        self.error: BaseException | None = None
        self.done = False
        self.gate = threading.Lock()
        self.gate.acquire()  # released by the writer: done, or your turn to write


class GroupCommit[Item, Result]:
    """Leader and followers: ``submit`` returns ``write([...])``'s result for its item.

    The first caller to find nobody writing becomes the writer: it takes the waiting items
    (its own among them, up to ``limit``), calls ``write`` with them in its own thread and
    connection, wakes their callers, and hands the writer's role to the next waiting caller
    if there is one. An exception from ``write`` is raised in every caller of that batch.
    """

    def __init__(
        self, write: Callable[[list[Item]], Sequence[Result]], limit: int, gather: float = 0.0
    ) -> None:
        self._write = write
        self._limit = max(1, limit)
        self._gather = gather
        self._mutex = threading.Lock()
        self._waiting: list[_Slot[Item, Result]] = []
        self._writing = False
        self.batches = 0  # how many writes (tests and the bench read it)

    def submit(self, item: Item) -> Result:
        slot: _Slot[Item, Result] = _Slot(item)
        with self._mutex:
            self._waiting.append(slot)
            lead = not self._writing
            self._writing = True
        if not lead:
            slot.gate.acquire()  # woken when written, or to write
        while not slot.done:
            self._write_next()
        if slot.error is not None:
            raise slot.error
        return slot.result  # type: ignore[return-value]

    def _write_next(self) -> None:
        if self._gather and len(self._waiting) < self._limit:
            time.sleep(self._gather)  # let the callers on their way join this batch
        with self._mutex:
            batch = self._waiting[: self._limit]
            del self._waiting[: self._limit]
        try:
            results = self._write([slot.item for slot in batch])
            for slot, result in zip(batch, results, strict=True):
                slot.result = result
        except BaseException as exc:  # every caller of the batch gets it
            for slot in batch:
                slot.error = exc
        finally:
            try:
                connection_release()
            except Exception:  # the callers must be answered whatever happens here
                logger.warning("could not give a connection back after a batch", exc_info=True)
            with self._mutex:
                self.batches += 1
                for slot in batch:
                    slot.done = True
                successor = self._waiting[0] if self._waiting else None
                self._writing = successor is not None
            for slot in batch:
                if slot.gate.locked():
                    slot.gate.release()  # its caller (if not this thread) returns
            if successor is not None:
                successor.gate.release()  # its caller writes the next batch


# -- the claim: queued → dispatched, before the call -----------------------------------------


@dataclass(frozen=True)
class Claim:
    request: TopupRequest
    slot: str  # the provider slot it holds (throttle.slots_release)


def _claim_write(ids: list[int]) -> list[Claim | None]:
    """Dispatch the batch's queued live recharges, each with one of the provider's slots in
    flight (taken for the batch in one round trip, before any row is locked); None for the
    others (and for a second copy of an id in the same batch): the one-at-a-time path takes
    them, waiting for a slot where none was left."""
    provider_name = settings.AIRTIME_PROVIDER
    unique = list(dict.fromkeys(ids))
    slots = throttle.slots_take(provider_name, len(unique))
    try:
        requests = _claim_rows(unique, room=len(slots)) if slots else {}
    except BaseException:
        _slots_give_back(provider_name, slots)
        raise
    # Committed: from here on every claim is answered, even if Redis fails now.
    _slots_give_back(provider_name, slots[len(requests) :])
    held = dict(zip(requests, slots, strict=False))
    results: list[Claim | None] = []
    for pk in ids:
        request = requests.pop(pk, None)
        results.append(None if request is None else Claim(request, held[pk]))
    return results


def _slots_give_back(provider_name: str, slots: list[str]) -> None:
    """Release slots not used; if Redis fails now, their leases run out by themselves."""
    try:
        throttle.slots_release(provider_name, slots)
    except Exception:
        logger.warning("could not release %d provider slots", len(slots), exc_info=True)


def _claim_rows(ids: list[int], *, room: int) -> dict[int, TopupRequest]:
    """Up to ``room`` of these recharges moved from ``queued`` to ``dispatched``, committed:
    what to send for each."""
    recharge, event = Recharge._meta.db_table, RechargeEvent._meta.db_table
    product, operator = Product._meta.db_table, Operator._meta.db_table
    requests: dict[int, TopupRequest] = {}
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(
            "SELECT r.id, r.public_id, r.recipient_number, p.public_id, p.country_id,"  # noqa: S608 (names from the models; values are parameters)
            " o.public_id, p.local_amount, p.local_currency"
            f" FROM {recharge} r JOIN {product} p ON p.id = r.product_id"
            f" JOIN {operator} o ON o.id = p.operator_id"
            " WHERE r.id = ANY(%s) AND r.status = %s AND r.livemode"
            " ORDER BY r.id FOR UPDATE OF r",
            [ids, S.QUEUED],
        )
        rows = cursor.fetchall()
        kept = products_get(product_ids={row[3] for row in rows})
        for pk, public_id, number, product_id, country, op_id, amount, currency in rows:
            known = kept.get(product_id)
            if known is None or product_waitlist_promotion(product=known) is not None:
                continue  # an inactive product, or one to wait for: the one-at-a-time path
            if len(requests) == room:
                break
            requests[pk] = TopupRequest(
                reference=public_id,
                recipient_number=number,
                country=country,
                operator_id=op_id,
                product_id=product_id,
                amount=amount,
                currency=currency,
            )
        if requests:
            now = timezone.now()
            claimed = list(requests)
            cursor.execute(
                f"UPDATE {recharge} SET status = %s, attempts = attempts + 1,"  # noqa: S608 (names from the models; values are parameters)
                " dispatched_at = %s, updated_at = %s WHERE id = ANY(%s)",
                [S.DISPATCHED, now, now, claimed],
            )
            cursor.execute(
                f"INSERT INTO {event} (recharge_id, from_status, to_status, note, created_at)"
                " SELECT unnest(%s::bigint[]), %s, %s, '', %s",
                [claimed, S.QUEUED, S.DISPATCHED, now],
            )
    return requests


# -- the answer: dispatched → delivered, with its event --------------------------------------


@dataclass(frozen=True)
class Delivered:
    recharge_id: int
    result: ProviderResult
    provider_name: str
    slot: str  # given back with the batch, once written


def _deliver_write(items: list[Delivered]) -> list[Outcome | None]:
    try:
        return _deliver_rows(items)
    finally:
        _slots_give_back(settings.AIRTIME_PROVIDER, [item.slot for item in items])


def _deliver_rows(items: list[Delivered]) -> list[Outcome | None]:
    """Mark the batch's recharges delivered (only those still ``dispatched``: staff may have
    failed one meanwhile), their history rows and their events; None for the others."""
    recharge, event = Recharge._meta.db_table, RechargeEvent._meta.db_table
    now = timezone.now()
    with transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute(
                f"UPDATE {recharge} r SET status = %s, delivered_at = %s, updated_at = %s,"  # noqa: S608 (names from the models; values are parameters)
                " provider = v.provider, provider_transaction_id = v.txid,"
                " provider_response = v.raw::jsonb"
                " FROM unnest(%s::bigint[], %s::text[], %s::text[], %s::text[])"
                " AS v(id, provider, txid, raw)"
                " WHERE r.id = v.id AND r.status = %s RETURNING r.id, r.account_id, r.livemode",
                [
                    S.DELIVERED,
                    now,
                    now,
                    [item.recharge_id for item in items],
                    [item.provider_name for item in items],
                    [item.result.transaction_id or "" for item in items],
                    [_json(item.result.raw) for item in items],
                    S.DISPATCHED,
                ],
            )
            moved = {pk: (account_id, livemode) for pk, account_id, livemode in cursor.fetchall()}
            if moved:
                notes = {
                    item.recharge_id: f"{item.provider_name} {item.result.transaction_id}"[:255]
                    for item in items
                }
                cursor.execute(
                    f"INSERT INTO {event} (recharge_id, from_status, to_status, note, created_at)"
                    " SELECT unnest(%s::bigint[]), %s, %s, unnest(%s::text[]), %s",
                    [list(moved), S.DISPATCHED, S.DELIVERED, [notes[pk] for pk in moved], now],
                )
        if moved:
            _emit_delivered(moved)
    return [Outcome(S.DELIVERED) if item.recharge_id in moved else None for item in items]


def _json(raw) -> str | None:
    return None if raw is None else json.dumps(raw)


def _emit_delivered(moved: dict[int, tuple[int, bool]]) -> None:
    """The ``recharge.delivered`` events of a batch: one read of the accounts' endpoints,
    then the recharges of the accounts that want the event, read and written together."""
    wanting = subscribers_by_owner(
        account_ids={account for account, _ in moved.values()},
        event_type=EVENT_OF_STATUS[S.DELIVERED],
    )
    hooked = [pk for pk, owner in moved.items() if owner in wanting]
    if hooked:
        recharges_emit(hooked, wanting)


# -- the processor's common path, grouped ----------------------------------------------------

_claims: GroupCommit[int, Claim | None] | None = None
_deliveries: GroupCommit[Delivered, Outcome | None] | None = None
_setup = threading.Lock()


def _groups() -> tuple[GroupCommit[int, Claim | None], GroupCommit[Delivered, Outcome | None]]:
    global _claims, _deliveries
    with _setup:
        if _claims is None or _deliveries is None:
            limit = settings.RECHARGE_GROUP_COMMIT_MAX
            gather = settings.RECHARGE_GROUP_COMMIT_GATHER_MS / 1000
            _claims = GroupCommit(_claim_write, limit, gather)
            _deliveries = GroupCommit(_deliver_write, limit, gather)
        return _claims, _deliveries


def enabled() -> bool:
    return settings.RECHARGE_GROUP_COMMIT_MAX > 1 and connection.vendor == "postgresql"


def recharge_process_grouped(*, recharge_id: int, provider=None) -> Outcome | None:
    """``processor.recharge_process`` for a recharge's first task (no ``attempt``, no
    ``quiet_since``), its provider slot and its two writes shared with the process's other
    threads. None when it was not taken (off the common path, or no slot was free): the
    caller processes it one at a time, as before."""
    if not enabled():
        return None
    claims, deliveries = _groups()
    try:
        claim = claims.submit(recharge_id)
    except Exception:  # the batch rolled back: this recharge goes one at a time
        logger.warning("claim batch failed; recharge %s one at a time", recharge_id, exc_info=True)
        return None
    if claim is None:
        return None
    given_back = False

    def apply(pk: int, result: ProviderResult, provider_name: str) -> Outcome:
        nonlocal given_back
        if result.status == ProviderResult.DELIVERED:
            try:
                done = deliveries.submit(Delivered(pk, result, provider_name, claim.slot))
            except Exception:  # one bad row rolls its batch back: this one, on its own
                logger.warning("delivery batch failed; recharge %s on its own", pk, exc_info=True)
                done = None
            else:
                given_back = True  # with the batch
            if done is not None:
                return done
        return processor.apply_result(pk, result, provider_name)

    try:
        return processor.recharge_call(recharge_id, claim.request, provider=provider, apply=apply)
    finally:
        if not given_back:
            _slots_give_back(settings.AIRTIME_PROVIDER, [claim.slot])
