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
from orders.recharges.events import (
    EVENT_OF_STATUS,
    RECHARGE_COLUMNS,
    Draft,
    Read,
    Step,
    draft_delivered,
    draft_read,
    draft_sql,
    lookup_sql,
    recharge_read,
    recharges_emit,
)
from orders.recharges.processor import Outcome
from orders.recharges.providers import ProviderResult, TopupRequest
from reseller.db import connection_release
from webhooks.models import Delivery, WebhookEndpoint, new_delivery_id
from webhooks.models import Event as WebhookEvent
from webhooks.outbox import (
    Subscriber,
    deliveries_add,
    events_emit_many,
    subscribers_read,
    subscribers_sql,
    wake_after_commit,
)

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
    draft: Draft | None  # its event's content, when its account had an endpoint


def _claim_write(ids: list[int]) -> list[Claim | None]:
    """Dispatch the batch's queued live recharges, each with one of the provider's slots in
    flight (taken for the batch in one round trip, before any row is locked); None for the
    others (and for a second copy of an id in the same batch): the one-at-a-time path takes
    them, waiting for a slot where none was left."""
    provider_name = settings.AIRTIME_PROVIDER
    unique = list(dict.fromkeys(ids))
    slots = throttle.slots_take(provider_name, len(unique))
    try:
        requests, drafts = _claim_rows(unique, room=len(slots)) if slots else ({}, {})
    except BaseException:
        _slots_give_back(provider_name, slots)
        raise
    # Committed: from here on every claim is answered, even if Redis fails now.
    _slots_give_back(provider_name, slots[len(requests) :])
    held = dict(zip(requests, slots, strict=False))
    results: list[Claim | None] = []
    for pk in ids:
        request = requests.pop(pk, None)
        results.append(None if request is None else Claim(request, held[pk], drafts.get(pk)))
    return results


def _slots_give_back(provider_name: str, slots: list[str]) -> None:
    """Release slots not used; if Redis fails now, their leases run out by themselves."""
    try:
        throttle.slots_release(provider_name, slots)
    except Exception:
        logger.warning("could not release %d provider slots", len(slots), exc_info=True)


def _claim_rows(ids: list[int], *, room: int) -> tuple[dict[int, TopupRequest], dict[int, Draft]]:
    """Up to ``room`` of these recharges moved from ``queued`` to ``dispatched``, committed:
    what to send for each, and the drafts of their events (for accounts with an endpoint)."""
    recharge, event = Recharge._meta.db_table, RechargeEvent._meta.db_table
    product, operator = Product._meta.db_table, Operator._meta.db_table
    requests: dict[int, TopupRequest] = {}
    drafts: dict[int, Draft] = {}
    now = timezone.now()
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(
            "SELECT r.id, r.public_id, r.recipient_number, p.public_id, p.country_id,"  # noqa: S608 (names from the models; values are parameters)
            " o.public_id, p.local_amount, p.local_currency, s.endpoints,"
            f" {draft_sql('r', 's.endpoints')}"
            f" FROM {recharge} r JOIN {product} p ON p.id = r.product_id"
            f" JOIN {operator} o ON o.id = p.operator_id,"
            f" LATERAL (SELECT {subscribers_sql('r')} AS endpoints) s"
            " WHERE r.id = ANY(%s) AND r.status = %s AND r.livemode"
            " ORDER BY r.id FOR UPDATE OF r",
            [ids, S.QUEUED],
        )
        rows = cursor.fetchall()
        kept = products_get(product_ids={row[3] for row in rows})
        for row in rows:
            pk, public_id, number, product_id, country, op_id, amount, currency = row[:8]
            endpoints, draft_columns = row[8], row[9:]
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
            draft = draft_read(
                draft_columns,
                product=(product_id, amount, currency),
                endpoints=endpoints,
                claimed_at=now,
            )
            if draft is not None:
                drafts[pk] = draft
        if requests:
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
    return requests, drafts


# -- the answer: dispatched → delivered, with its event --------------------------------------


@dataclass(frozen=True)
class Delivered:
    recharge_id: int
    result: ProviderResult
    provider_name: str
    slot: str  # given back with the batch, once written
    draft: Draft | None = None  # the claim's


def _deliver_write(items: list[Delivered]) -> list[Outcome | None]:
    try:
        return _deliver_rows(items)
    finally:
        _slots_give_back(settings.AIRTIME_PROVIDER, [item.slot for item in items])


def _deliver_rows(items: list[Delivered]) -> list[Outcome | None]:
    """Mark the batch's recharges delivered (only those still ``dispatched``: staff may have
    failed one meanwhile), their history rows and their events; None for the others.

    The ``recharge.delivered`` events of drafted recharges (``Claim.draft``) are built first
    and written by the statement that moves the rows, with a delivery for each endpoint of
    the draft that still wants them. The statement also reads each account's endpoints as
    they are now: an endpoint added during the call gets its delivery, and an account that
    had none at the claim but has one now gets its event, after it (``_emit_changed``).

    An endpoint whose worker holds its lease is not woken: the statement share-locks the
    endpoint's row, so the worker cannot release the lease before this commits, and it reads
    what is due after releasing it (``webhooks.delivery.endpoint_drain``). A steady stream
    of events to a busy endpoint so costs no round trip to Redis."""
    recharge, history = Recharge._meta.db_table, RechargeEvent._meta.db_table
    event, delivery = WebhookEvent._meta.db_table, Delivery._meta.db_table
    endpoint = WebhookEndpoint._meta.db_table
    now = timezone.now()
    event_type = EVENT_OF_STATUS[S.DELIVERED]
    notes = [f"{item.provider_name} {item.result.transaction_id}"[:255] for item in items]
    drafted: dict[int, WebhookEvent] = {}
    for item, note in zip(items, notes, strict=True):
        if item.draft is not None:
            drafted[item.recharge_id] = draft_delivered(
                item.draft, transaction_id=item.result.transaction_id or "", note=note, now=now
            )
    returned = ", ".join(f"r.{column}" for column in RECHARGE_COLUMNS)
    columns = ", ".join(f"u.{column}" for column in RECHARGE_COLUMNS)
    with transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute(
                "WITH v AS (SELECT * FROM unnest(%s::bigint[], %s::text[], %s::text[],"  # noqa: S608 (names from the models; values are parameters)
                " %s::text[], %s::text[], %s::text[], %s::text[])"
                " AS v(id, provider, txid, raw, note, event_id, body)),"
                f" u AS (UPDATE {recharge} r SET status = %s, delivered_at = %s, updated_at = %s,"
                " provider = v.provider, provider_transaction_id = v.txid,"
                " provider_response = v.raw::jsonb"
                " FROM v WHERE r.id = v.id AND r.status = %s"
                f" RETURNING {returned}, r.product_id, r.order_id, r.payment_id,"
                " v.note, v.event_id, v.body),"
                f" h AS (INSERT INTO {history} (recharge_id, from_status, to_status, note,"
                " created_at) SELECT u.id, %s, %s, u.note, %s FROM u),"
                # The drafted events' deliveries, to endpoints that still want the event;
                # ``drained``: a worker holds the endpoint's lease. The share lock keeps it
                # from releasing the lease until this commits (it reads what is due after).
                " dv AS (SELECT dv.*, COALESCE(w.lease_until > %s, false) AS drained"
                " FROM unnest(%s::text[], %s::text[], %s::bigint[])"
                " AS dv(event_id, public_id, endpoint_id)"
                f" JOIN {endpoint} w ON w.id = dv.endpoint_id AND w.status = %s"
                " AND (jsonb_array_length(w.events) = 0 OR w.events ? %s) FOR SHARE OF w),"
                f" e AS (INSERT INTO {event} (public_id, account_id, livemode, type, body,"
                " created_at) SELECT u.event_id, u.account_id, u.livemode, %s, u.body, %s"
                " FROM u WHERE u.event_id IN (SELECT dv.event_id FROM dv)"
                " RETURNING id, public_id),"
                f" d AS (INSERT INTO {delivery} (public_id, event_id, endpoint_id, state,"
                " attempts, next_attempt_at, last_error, created_at, updated_at)"
                " SELECT dv.public_id, e.id, dv.endpoint_id, %s, 0, %s, '', %s, %s"
                " FROM e JOIN dv ON dv.event_id = e.public_id)"
                f" SELECT {columns}, u.note, s.endpoints, e.id,"
                f" CASE WHEN s.endpoints IS NOT NULL AND u.event_id IS NULL"
                f" THEN {lookup_sql('u')} END,"
                " (SELECT array_agg(DISTINCT dv.endpoint_id) FROM dv"
                " WHERE NOT dv.drained AND dv.event_id IN (SELECT e.public_id FROM e))"
                " FROM u CROSS JOIN LATERAL"
                f" (SELECT {subscribers_sql('u')} AS endpoints) s"
                " LEFT JOIN e ON e.public_id = u.event_id",
                [
                    [item.recharge_id for item in items],
                    [item.provider_name for item in items],
                    [item.result.transaction_id or "" for item in items],
                    [_json(item.result.raw) for item in items],
                    notes,
                    [_event_id(drafted.get(item.recharge_id)) for item in items],
                    [_event_body(drafted.get(item.recharge_id)) for item in items],
                    S.DELIVERED,
                    now,
                    now,
                    S.DISPATCHED,
                    S.DISPATCHED,
                    S.DELIVERED,
                    now,
                    now,
                    *_drafted_deliveries(items, drafted),
                    WebhookEndpoint.Status.ENABLED,
                    event_type,
                    event_type,
                    now,
                    Delivery.State.PENDING,
                    now,
                    now,
                    now,
                ],
            )
            rows = cursor.fetchall()
        if rows:
            _emit_changed(rows, items, drafted, now)
    moved = {row[0] for row in rows}
    return [Outcome(S.DELIVERED) if item.recharge_id in moved else None for item in items]


def _event_id(event: WebhookEvent | None) -> str | None:
    return None if event is None else event.public_id


def _event_body(event: WebhookEvent | None) -> str | None:
    return None if event is None else event.body


def _drafted_deliveries(
    items: list[Delivered], drafted: dict[int, WebhookEvent]
) -> tuple[list[str], list[str], list[int]]:
    """The deliveries of the drafted events, to the endpoints their drafts read, as arrays:
    (event's public id, delivery's public id, endpoint)."""
    event_ids: list[str] = []
    endpoint_ids: list[int] = []
    for item in items:
        event = drafted.get(item.recharge_id)
        if event is not None and item.draft is not None:
            for endpoint_id in item.draft.endpoint_ids:
                event_ids.append(event.public_id)
                endpoint_ids.append(endpoint_id)
    return event_ids, [new_delivery_id() for _ in event_ids], endpoint_ids


def _json(raw) -> str | None:
    return None if raw is None else json.dumps(raw)


def _emit_changed(
    rows: list[tuple], items: list[Delivered], drafted: dict[int, WebhookEvent], now
) -> None:
    """After the statement: wake the endpoints it wrote deliveries for that no worker is
    draining, and write what the endpoints' changes since the claims ask for (rare): an
    event for an account that has an endpoint now but had none then, a delivery for an
    endpoint added since."""
    width = len(RECHARGE_COLUMNS)
    event_type = EVENT_OF_STATUS[S.DELIVERED]
    drafts = {item.recharge_id: item.draft for item in items if item.draft is not None}
    woken: set[int] = set()
    fresh: list[tuple[Read, list[Subscriber]]] = []
    unwritten: list[tuple[WebhookEvent, list[Subscriber]]] = []
    late: list[tuple[WebhookEvent, list[Subscriber]]] = []
    for row in rows:
        values, (note, endpoints, event_pk, lookup, to_wake) = row[:width], row[width:]
        woken.update(to_wake or [])
        if endpoints is None:
            continue
        pk = values[0]
        wanting = subscribers_read(endpoints, event_type=event_type)
        draft = drafts.get(pk)
        if draft is None:
            if wanting:
                then = [Step(S.DISPATCHED, S.DELIVERED, note, now)]
                fresh.append((recharge_read(values, lookup, then=then), wanting))
            continue
        event = drafted[pk]
        if event_pk is None:  # no endpoint of the draft wants it any more
            if wanting:
                unwritten.append((event, wanting))
            continue
        event.pk, event._state.adding = event_pk, False
        added = [e for e in wanting if e.pk not in draft.endpoint_ids]
        if added:
            late.append((event, added))
    if woken:
        wake_after_commit(sorted(woken))
    if fresh:
        recharges_emit(fresh)
    if unwritten:
        events_emit_many(unwritten)
    for event, added in late:
        deliveries_add(event, added)


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
                done = deliveries.submit(
                    Delivered(pk, result, provider_name, claim.slot, claim.draft)
                )
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
