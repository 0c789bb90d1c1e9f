"""The recharge state machine (docs/contract.md §5), in one place.

    queued ──► dispatched ──► delivered ──► reversed (the provider took it back; refunded)
      │  ▲          │
      │  │          └──────► failed ──► queued (staff retry, after a new debit)
      ▼  │
    waitlisted          queued/waitlisted ──► failed (refused before dispatch)

This module is the one writer of a recharge's status and of its history (RechargeEvent):
``recharges_start`` writes new recharges with their first history row, ``transition`` moves
one locked recharge, ``transition_many`` moves a batch of locked recharges in a few ORM
statements (the processor's group commit). Each refuses any move not listed here, stamps the
state's timestamp and writes a RechargeEvent per move, so the admin shows each recharge's
history. Other fields of a recharge (refund marks, attempts) are written by the processor.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from django.utils import timezone

from recharges.models import Recharge, RechargeEvent
from reseller.errors import ApplicationError
from reseller.metrics import RECHARGES

S = Recharge.Status

ALLOWED: dict[str, frozenset[str]] = {
    S.QUEUED: frozenset({S.DISPATCHED, S.WAITLISTED, S.FAILED}),
    S.WAITLISTED: frozenset({S.QUEUED, S.FAILED}),
    S.DISPATCHED: frozenset({S.DELIVERED, S.FAILED}),
    S.DELIVERED: frozenset({S.REVERSED}),
    S.FAILED: frozenset({S.QUEUED}),
    S.REVERSED: frozenset(),
}

# Test-mode rows never reach a provider: the sandbox moves them to a simulated outcome.
SANDBOX_ALLOWED: dict[str, frozenset[str]] = {
    S.QUEUED: frozenset({S.SUCCESS, S.PROCESSING, S.REJECTED, S.TIMEOUT}),
    S.PROCESSING: frozenset({S.SUCCESS}),
    S.SUCCESS: frozenset(),
    S.REJECTED: frozenset(),
    S.TIMEOUT: frozenset(),
}

TIMESTAMP: dict[str, str] = {
    S.QUEUED: "queued_at",
    S.DISPATCHED: "dispatched_at",
    S.DELIVERED: "delivered_at",
    S.FAILED: "failed_at",
    S.REVERSED: "reversed_at",
    S.SUCCESS: "delivered_at",
    S.REJECTED: "failed_at",
    S.TIMEOUT: "failed_at",
}

FINAL = frozenset({S.DELIVERED, S.FAILED, S.REVERSED, S.SUCCESS, S.REJECTED, S.TIMEOUT})
# The final statuses in which the recipient got the top-up (live and sandbox).
DELIVERED = frozenset({S.DELIVERED, S.SUCCESS})
# The statuses a live recharge can have, in the order it goes through them; the final ones.
LIVE_STATUSES = (S.QUEUED, S.WAITLISTED, S.DISPATCHED, S.DELIVERED, S.FAILED, S.REVERSED)
LIVE_FINAL = tuple(status for status in LIVE_STATUSES if status in FINAL)


class IllegalTransition(ApplicationError):
    code = "illegal_transition"
    status = 409
    title = "Conflict"


def can_move(from_status: str, to_status: str, *, livemode: bool = True) -> bool:
    allowed = ALLOWED if livemode else SANDBOX_ALLOWED
    return to_status in allowed.get(from_status, frozenset())


def transition(
    recharge: Recharge,
    to_status: str,
    *,
    note: str = "",
    actor=None,
    extra_fields: dict | None = None,
) -> Recharge:
    """Move a (locked) recharge to ``to_status`` and record it; refuse illegal moves."""
    from_status = recharge.status
    if not can_move(from_status, to_status, livemode=recharge.livemode):
        raise IllegalTransition(f"A recharge cannot move from {from_status} to {to_status}.")
    now = timezone.now()
    fields = {"status": to_status, "updated_at": now, **(extra_fields or {})}
    if to_status in TIMESTAMP:
        fields[TIMESTAMP[to_status]] = now
    for name, value in fields.items():
        setattr(recharge, name, value)
    recharge.save(update_fields=list(fields))
    RechargeEvent.objects.create(
        recharge=recharge,
        from_status=from_status,
        to_status=to_status,
        note=note[:255],
        actor=actor,
        created_at=now,
    )
    if to_status in FINAL:
        RECHARGES.labels(to_status, recharge.provider).inc()
    return recharge


def recharges_start(recharges: Sequence[Recharge], *, note: str, now: datetime) -> None:
    """Write new recharges (built, not saved) and the first history row of each: from nothing
    to its status. Two ``bulk_create`` statements whatever the number of recharges."""
    Recharge.objects.bulk_create(recharges)
    RechargeEvent.objects.bulk_create(
        [
            RechargeEvent(
                recharge=recharge,
                from_status="",
                to_status=recharge.status,
                note=note[:255],
                created_at=now,
            )
            for recharge in recharges
        ]
    )


def recharges_release(recharge_ids: Sequence[int], *, now: datetime) -> int:
    """Mark queued recharges as published (fair dispatch's feeder, after their messages went
    out): they leave their account's backlog and count in its share until claimed. Not a
    move: no history row. Rows claimed meanwhile are left as they are."""
    if not recharge_ids:
        return 0
    # Rows a worker is claiming right now are skipped, not waited for (they are leaving
    # ``queued``): the feeder never waits on a claim that may wait on it, so no deadlock.
    free = (
        Recharge.objects.select_for_update(skip_locked=True)
        .filter(pk__in=recharge_ids, status=S.QUEUED)
        .order_by("pk")
        .values_list("pk", flat=True)
    )
    return Recharge.objects.filter(pk__in=list(free)).update(released_at=now, updated_at=now)


def transition_many(
    recharges: Sequence[Recharge],
    to_status: str,
    *,
    notes: Sequence[str] | None = None,
    fields: Sequence[str] = (),
    values: dict[str, Any] | None = None,
    actor=None,
) -> None:
    """``transition`` for a batch of recharges locked by the caller, all in the same status:
    one ``QuerySet.update`` of what every row gets (the status, its time, ``values``: plain
    values or expressions such as ``F("attempts") + 1``), one ``bulk_update`` of the
    attributes the caller set on each instance that differ between them (``fields``: the
    providers' answers), and one ``bulk_create`` of their history rows. ``notes`` is each
    move's note, in the recharges' order. Instances follow the status and its time; ``values``
    are the caller's to mirror in memory."""
    if not recharges:
        return
    now = timezone.now()
    same: dict[str, Any] = {"status": to_status, "updated_at": now, **(values or {})}
    if to_status in TIMESTAMP:
        same[TIMESTAMP[to_status]] = now
    history = []
    for index, recharge in enumerate(recharges):
        from_status = recharge.status
        if not can_move(from_status, to_status, livemode=recharge.livemode):
            raise IllegalTransition(f"A recharge cannot move from {from_status} to {to_status}.")
        recharge.status = to_status
        recharge.updated_at = now
        if to_status in TIMESTAMP:
            setattr(recharge, TIMESTAMP[to_status], now)
        note = notes[index] if notes is not None else ""
        history.append(
            RechargeEvent(
                recharge=recharge,
                from_status=from_status,
                to_status=to_status,
                note=note[:255],
                actor=actor,
                created_at=now,
            )
        )
    differing = []
    for name in fields:
        first = getattr(recharges[0], name)
        if all(getattr(recharge, name) == first for recharge in recharges):
            same[name] = first  # one value for the batch: no CASE over its rows
        else:
            differing.append(name)
    Recharge.objects.filter(pk__in=[recharge.pk for recharge in recharges]).update(**same)
    if differing:
        Recharge.objects.bulk_update(recharges, differing)
    RechargeEvent.objects.bulk_create(history)
    if to_status in FINAL:
        for recharge in recharges:
            RECHARGES.labels(to_status, recharge.provider).inc()
