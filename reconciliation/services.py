"""Reconciliation with a provider (docs/providers.md, "Reconciliation"): its transaction
report for one UTC day, matched by our reference to our live recharges sent there. The only
writer of this app's tables.

The provider is asked first, outside any database transaction or lock. Its report is then
compared with our rows: a line whose reference we hold at that provider is matched, or an
amount or status mismatch; a line we do not hold there is missing here; a recharge we hold
delivered there that its report does not list is missing there. A reversal it reports for a
recharge we hold delivered is applied (``recharges.services.recharge_reverse``, exactly once
whoever calls it). The run and its items are written in one transaction, with an email to
staff when it found a discrepancy.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time, timedelta
from decimal import Decimal

from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from accounts.models import User
from emails.outbox import email_queue_to_user
from recharges.models import Recharge
from recharges.services import recharge_reverse
from reconciliation.models import ReconciliationItem, ReconciliationRun
from reseller.errors import ApplicationError
from upstreams.adapters import ProviderError, ProviderResult, UpstreamTransaction, adapter_for
from upstreams.models import Provider

logger = logging.getLogger(__name__)

# The kinds that keep a transaction report (the simulator keeps references only).
RECONCILABLE = frozenset({Provider.Kind.RELOADLY, Provider.Kind.DTONE, Provider.Kind.DING})
CENT = Decimal("0.01")
S = Recharge.Status
R = ProviderResult
K = ReconciliationItem.Kind
REVERSED = S.REVERSED  # taken back by its provider after delivery

# Our status, and the provider statuses that agree with it. A failed recharge queued again
# by staff is still failed at that provider.
AGREES: dict[str, frozenset[str]] = {
    S.DELIVERED: frozenset({R.DELIVERED}),
    REVERSED: frozenset({R.REVERSED}),
    S.FAILED: frozenset({R.FAILED}),
    S.QUEUED: frozenset({R.FAILED}),
    S.WAITLISTED: frozenset({R.FAILED}),
    S.DISPATCHED: frozenset({R.PENDING}),
}
# What must be in their report when we hold it at that provider.
MUST_BE_THERE = frozenset({S.DELIVERED, REVERSED})


class NotReconcilable(ApplicationError):
    status = 400
    code = "validation_error"


@dataclass
class _Found:
    """What a comparison found, before anything is written."""

    matched: int = 0
    items: list[ReconciliationItem] = field(default_factory=list)
    reversals: list[tuple[Recharge, UpstreamTransaction]] = field(default_factory=list)


def day_bounds(day: date) -> tuple[datetime, datetime]:
    start = datetime.combine(day, time.min, tzinfo=UTC)
    return start, start + timedelta(days=1)


def reconciliation_run(*, provider: Provider, day: date) -> ReconciliationRun:
    """Reconcile ``provider``'s report of ``day`` (UTC) with our recharges; the stored run.

    Raises ``NotReconcilable`` for a kind without a report, and the adapter's
    ``ProviderError`` when the report cannot be read (the run is kept, with the error)."""
    if provider.kind not in RECONCILABLE:
        raise NotReconcilable(
            f"{provider.name} is a {provider.kind} provider: it keeps no transaction report."
        )
    started = timezone.now()
    try:
        lines = adapter_for(provider).transactions(day=day)  # no transaction open
    except ProviderError as exc:
        _run_save(
            provider=provider,
            day=day,
            started=started,
            found=_Found(),
            lines=0,
            recharges=0,
            reversals_applied=0,
            error=f"{type(exc).__name__}: {exc}"[:255],
        )
        raise
    ours = _ours(provider=provider, day=day)
    found = _compare(provider=provider, lines=lines, ours=ours)
    applied = _reversals_apply(found)
    return _run_save(
        provider=provider,
        day=day,
        started=started,
        found=found,
        lines=len(lines),
        recharges=len(ours),
        reversals_applied=applied,
        error="",
    )


def _ours(*, provider: Provider, day: date) -> dict[str, Recharge]:
    """Our live recharges at ``provider`` dispatched or delivered on ``day``, by reference."""
    start, end = day_bounds(day)
    window = Q(dispatched_at__gte=start, dispatched_at__lt=end) | Q(
        delivered_at__gte=start, delivered_at__lt=end
    )
    rows = Recharge.objects.filter(window, livemode=True, provider=provider.name)
    return {r.public_id: r for r in rows.select_related("product").order_by("id")}


def _compare(
    *, provider: Provider, lines: list[UpstreamTransaction], ours: dict[str, Recharge]
) -> _Found:
    found = _Found()
    theirs: dict[str, UpstreamTransaction] = {}
    for line in lines:
        if not line.reference:
            if line.status != R.FAILED:
                found.items.append(_missing_here(line, None, provider))
            continue
        held = theirs.get(line.reference)
        # One reference twice (a report paged while it grew): a failed line never hides
        # a delivered one.
        if held is None or held.status == R.FAILED:
            theirs[line.reference] = line
    elsewhere = {
        r.public_id: r
        for r in Recharge.objects.filter(public_id__in=set(theirs) - set(ours)).select_related(
            "product"
        )
    }
    for reference, line in theirs.items():
        recharge = ours.get(reference) or elsewhere.get(reference)
        if recharge is None or recharge.provider != provider.name or not recharge.livemode:
            if line.status != R.FAILED:  # a refusal moved no money: nothing to reconcile
                found.items.append(_missing_here(line, recharge, provider))
            continue
        _compare_one(found, recharge, line)
    for reference, recharge in ours.items():
        if reference not in theirs and recharge.status in MUST_BE_THERE:
            found.items.append(
                _item(
                    K.MISSING_THERE,
                    recharge,
                    None,
                    detail=f"{provider.name}'s report has no transaction with our reference",
                )
            )
    return found


def _compare_one(found: _Found, recharge: Recharge, line: UpstreamTransaction) -> None:
    if recharge.status == S.DELIVERED and line.status == R.REVERSED:
        found.reversals.append((recharge, line))
        return
    if line.status not in AGREES.get(recharge.status, frozenset()):
        found.items.append(
            _item(
                K.STATUS_MISMATCH,
                recharge,
                line,
                detail=f"ours {recharge.status}, theirs {line.status}",
            )
        )
        return
    if recharge.status == S.DELIVERED:
        mismatch = _amount_mismatch(recharge, line)
        if mismatch is not None:
            found.items.append(mismatch)
            return
    found.matched += 1


def _amount_mismatch(recharge: Recharge, line: UpstreamTransaction) -> ReconciliationItem | None:
    """What they debited against the cost we recorded (in the same currency), then the face
    value they delivered against the product's; to the cent."""
    cost_currency = (line.cost_currency or "").upper()
    if (
        recharge.cost is not None
        and line.cost is not None
        and cost_currency == recharge.cost_currency.upper()
        and _cents(line.cost) != _cents(recharge.cost)
    ):
        return _item(
            K.AMOUNT_MISMATCH,
            recharge,
            line,
            ours=(recharge.cost, recharge.cost_currency),
            theirs=(line.cost, cost_currency),
            detail="cost: what they debited is not what we recorded",
        )
    product = recharge.product
    # What the provider reported delivering, else the amount chosen (a range) or the face value.
    delivered = recharge.amount_delivered
    if (
        line.amount is not None
        and delivered is not None
        and (line.currency or "").upper() == product.local_currency.upper()
        and _cents(line.amount) != _cents(delivered)
    ):
        return _item(
            K.AMOUNT_MISMATCH,
            recharge,
            line,
            ours=(delivered, product.local_currency),
            theirs=(line.amount, line.currency.upper()),
            detail="face value: what they delivered is not the product's amount",
        )
    chosen = recharge.face_value
    if (
        recharge.delivered_amount is not None
        and chosen is not None
        and _cents(recharge.delivered_amount) < _cents(chosen)
    ):
        # They agree with themselves, but the recipient got less than was sold (a range's
        # rate moved since the last sync): the amount chosen against what they gave.
        return _item(
            K.AMOUNT_MISMATCH,
            recharge,
            line,
            ours=(chosen, product.local_currency),
            theirs=(recharge.delivered_amount, product.local_currency),
            detail="face value: the recipient got less than the amount sold",
        )
    return None


def _reversals_apply(found: _Found) -> int:
    """Apply each reversal the report shows for a recharge we hold delivered: reversed and
    refunded once, whoever else applies it (a callback's look-up, another run). Each in its
    own transaction, the provider no longer involved. Applied, both sides agree: matched."""
    applied = 0
    for recharge, line in found.reversals:
        if recharge_reverse(recharge_id=recharge.pk, source="reconciliation"):
            applied += 1
            recharge.refresh_from_db(fields=["status", "updated_at"])
            found.matched += 1
            found.items.append(
                _item(
                    K.REVERSED,
                    recharge,
                    line,
                    ours=(recharge.amount, recharge.currency),
                    detail="the provider took it back: reversed here, its amount refunded",
                )
            )
            continue
        recharge.refresh_from_db(fields=["status", "updated_at"])
        if recharge.status == S.REVERSED:  # reversed meanwhile by someone else
            found.matched += 1
            continue
        found.items.append(
            _item(
                K.STATUS_MISMATCH,
                recharge,
                line,
                detail=f"ours {recharge.status}, theirs {line.status}",
            )
        )
    return applied


def _run_save(
    *,
    provider: Provider,
    day: date,
    started: datetime,
    found: _Found,
    lines: int,
    recharges: int,
    reversals_applied: int,
    error: str,
) -> ReconciliationRun:
    kinds = [item.kind for item in found.items]
    with transaction.atomic():
        run = ReconciliationRun.objects.create(
            provider=provider.name,
            provider_kind=provider.kind,
            day=day,
            started_at=started,
            finished_at=timezone.now(),
            report_lines=lines,
            recharges=recharges,
            matched=found.matched,
            missing_here=kinds.count(K.MISSING_HERE),
            missing_there=kinds.count(K.MISSING_THERE),
            mismatched=kinds.count(K.AMOUNT_MISMATCH) + kinds.count(K.STATUS_MISMATCH),
            reversals_applied=reversals_applied,
            error=error,
        )
        for item in found.items:
            item.run = run
        ReconciliationItem.objects.bulk_create(found.items)
        if run.discrepancies:
            _staff_tell(run)
    return run


def _staff_tell(run: ReconciliationRun) -> None:
    """Every active staff member hears of a run that found discrepancies (the outbox)."""
    context = {
        "run": run.public_id,
        "run_pk": run.pk,
        "provider": run.provider,
        "day": run.day.isoformat(),
        "matched": run.matched,
        "missing_here": run.missing_here,
        "missing_there": run.missing_there,
        "mismatched": run.mismatched,
        "reversals_applied": run.reversals_applied,
    }
    for user in User.objects.filter(is_staff=True, is_active=True).order_by("id"):
        email_queue_to_user(user=user, kind="reconciliation_mismatch", context=context)


# -- items ------------------------------------------------------------------------------------


def _cents(amount: Decimal) -> Decimal:
    return amount.quantize(CENT)


def _item(
    kind: str,
    recharge: Recharge | None,
    line: UpstreamTransaction | None,
    *,
    ours: tuple[Decimal | None, str] | None = None,
    theirs: tuple[Decimal | None, str] | None = None,
    detail: str = "",
) -> ReconciliationItem:
    """One discrepancy. Amounts shown by default: the cost each side recorded."""
    if ours is None:
        ours = (recharge.cost, recharge.cost_currency) if recharge is not None else (None, "")
    if theirs is None:
        theirs = (line.cost, line.cost_currency) if line is not None else (None, "")
    reference = recharge.public_id if recharge is not None else ""
    provider_reference = recharge.provider_transaction_id if recharge is not None else ""
    if line is not None:
        reference = reference or line.reference
        provider_reference = line.transaction_id or provider_reference
    return ReconciliationItem(
        kind=kind,
        recharge=recharge,
        our_reference=reference[:64],
        provider_reference=provider_reference[:128],
        ours_status=recharge.status if recharge is not None else "",
        theirs_status=line.status if line is not None else "",
        ours_amount=ours[0],
        ours_currency=(ours[1] or "").upper()[:3],
        theirs_amount=theirs[0],
        theirs_currency=(theirs[1] or "").upper()[:3],
        detail=detail[:255],
    )


def _missing_here(
    line: UpstreamTransaction, recharge: Recharge | None, provider: Provider
) -> ReconciliationItem:
    if recharge is None:
        detail = "we hold no recharge with this reference"
    elif not recharge.livemode:
        detail = "a test-mode recharge: it never went to a provider"
    else:
        detail = f"our recharge went to {recharge.provider or 'no provider'}, not {provider.name}"
    return _item(K.MISSING_HERE, recharge, line, detail=detail)
