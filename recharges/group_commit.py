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

Every write is the ORM's: the claim is one ``select_for_update`` and the state module's
``transition_many`` (an ``update`` of what the rows share, a ``bulk_update`` of what differs,
a ``bulk_create`` of history rows); the delivery
the same, plus the outbox's ``events_emit_many`` for the accounts with endpoints. What makes
it cheap is the number of commits (one per batch), not the statements' shape.

PostgreSQL only (row locks taken by many threads at once); on SQLite, the embedded default
with one process, every recharge takes the one-at-a-time path.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from django.conf import settings
from django.db import connection, transaction
from django.db.models import F

from books.services import books_sales_record
from catalog.selectors import product_waitlist_promotion, products_get
from recharges import processor
from recharges.events import recharges_emit
from recharges.models import Recharge
from recharges.processor import Outcome
from recharges.state import transition_many
from reseller.db import connection_release
from upstreams import throttle
from upstreams.adapters import ProviderResult, TopupRequest
from upstreams.routing import routing_active
from webhooks.outbox import subscribed

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
            # Hold no pooled connection while waiting: the writer may need one to write this.
            connection_release()
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
    what to send for each. Rows are locked in id order; a row no longer ``queued`` (another
    task claimed it) is not in the locked set."""
    with transaction.atomic():
        rows = list(
            Recharge.objects.select_for_update(of=("self",))
            .filter(pk__in=ids, status=S.QUEUED, livemode=True)
            .select_related("product__operator")
            .order_by("pk")
        )
        kept = products_get(product_ids={row.product.public_id for row in rows})
        claimed: list[Recharge] = []
        for recharge in rows:
            known = kept.get(recharge.product.public_id)
            if known is None or (
                recharge.promotion_wait and product_waitlist_promotion(product=known) is not None
            ):
                continue  # an inactive product, or one to wait for: the one-at-a-time path
            if len(claimed) == room:
                break
            recharge.attempts += 1  # as the statement below leaves it
            claimed.append(recharge)
        transition_many(claimed, S.DISPATCHED, values={"attempts": F("attempts") + 1})
    return {recharge.pk: processor.topup_request(recharge) for recharge in claimed}


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


_TXID_LENGTH = Recharge._meta.get_field("provider_transaction_id").max_length or 0
_PROVIDER_LENGTH = Recharge._meta.get_field("provider").max_length or 0


def _fits(item: Delivered) -> bool:
    """An answer whose values fit their columns. ``bulk_update`` casts each value to its
    column's type, and PostgreSQL's cast to ``varchar(n)`` cuts a longer text silently: an
    answer that does not fit goes the one-at-a-time way, whose write refuses it (the row
    stays ``dispatched`` and the sweeper asks the provider again)."""
    return (
        len(item.result.transaction_id or "") <= _TXID_LENGTH
        and len(item.provider_name) <= _PROVIDER_LENGTH
    )


def _deliver_rows(items: list[Delivered]) -> list[Outcome | None]:
    """Mark the batch's recharges delivered (only those still ``dispatched``: staff may have
    failed one meanwhile), with their history rows and their ``recharge.delivered`` events,
    in one transaction; None for the others (the one-at-a-time path answers them)."""
    answers = {item.recharge_id: item for item in items if _fits(item)}
    with transaction.atomic():
        rows = list(
            Recharge.objects.select_for_update(of=("self",))
            .filter(pk__in=list(answers), status=S.DISPATCHED)
            .select_related("product")
            .annotate(subscribed=subscribed())
            .order_by("pk")
        )
        notes = []
        for recharge in rows:
            item = answers[recharge.pk]
            recharge.provider = item.provider_name
            recharge.provider_transaction_id = item.result.transaction_id or ""
            recharge.provider_response = item.result.raw
            notes.append(f"{item.provider_name} {item.result.transaction_id}")
        transition_many(
            rows,
            S.DELIVERED,
            notes=notes,
            fields=["provider", "provider_transaction_id", "provider_response"],
        )
        books_sales_record(
            sales=[processor.sale_of(recharge) for recharge in rows if recharge.livemode]
        )
        # Only the accounts with an endpoint (read with the lock): none, no endpoints query.
        recharges_emit([recharge for recharge in rows if recharge.subscribed])
    moved = {recharge.pk for recharge in rows}
    return [Outcome(S.DELIVERED) if item.recharge_id in moved else None for item in items]


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
    """On PostgreSQL, while no provider row routes recharges (a routed recharge takes its
    route's provider, its ceiling and its failover one at a time)."""
    return (
        settings.RECHARGE_GROUP_COMMIT_MAX > 1
        and connection.vendor == "postgresql"
        and not routing_active()
    )


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
