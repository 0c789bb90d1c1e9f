"""The recharge state machine (docs/contract.md section 5), in one place.

    queued ──► dispatched ──► delivered
      │  ▲          │
      │  │          └──────► failed ──► queued (staff retry, after a new debit)
      ▼  │
    waitlisted          queued/waitlisted ──► failed (refused before dispatch)

Every move goes through ``transition``: it refuses any move not listed here, stamps the
state's timestamp and writes a RechargeEvent, so the admin shows each recharge's history.
"""

from __future__ import annotations

from django.utils import timezone

from orders.models import Recharge, RechargeEvent
from reseller.errors import ApplicationError

S = Recharge.Status

ALLOWED: dict[str, frozenset[str]] = {
    S.QUEUED: frozenset({S.DISPATCHED, S.WAITLISTED, S.FAILED}),
    S.WAITLISTED: frozenset({S.QUEUED, S.FAILED}),
    S.DISPATCHED: frozenset({S.DELIVERED, S.FAILED}),
    S.DELIVERED: frozenset(),
    S.FAILED: frozenset({S.QUEUED}),
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
    S.SUCCESS: "delivered_at",
    S.REJECTED: "failed_at",
    S.TIMEOUT: "failed_at",
}

FINAL = frozenset({S.DELIVERED, S.FAILED, S.SUCCESS, S.REJECTED, S.TIMEOUT})
# The final statuses in which the recipient got the top-up (live and sandbox).
DELIVERED = frozenset({S.DELIVERED, S.SUCCESS})
# The statuses a live recharge can have, in the order it goes through them; the final ones.
LIVE_STATUSES = (S.QUEUED, S.WAITLISTED, S.DISPATCHED, S.DELIVERED, S.FAILED)
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
    return recharge
