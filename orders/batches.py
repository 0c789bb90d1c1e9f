"""Batches (docs/contract.md §13): up to 10,000 lines sent as one order, one debit.

Every line is validated before anything is charged (the serializer); the batch is then placed
like any order (``order_place_with_wallet``, idempotent by ``Idempotency-Key``), its recharges
queued for the processor, and a ``Batch`` row written in the same transaction. A batch is
``running`` until every recharge is final; the sweeper (beat) then marks it ``completed`` and
emits ``batch.completed``.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime
from typing import Any

from django.db import transaction
from django.db.models import Count, Max
from django.db.models.functions import Coalesce
from django.utils import timezone

from accounts.models import Account, User
from orders.idempotency import IdempotentReply, run_idempotent
from orders.models import Batch, Order
from orders.pricing import LineRequest
from orders.services import order_place_with_wallet
from recharges.models import Recharge
from recharges.sandbox import sandbox_status
from recharges.state import FINAL
from reseller.exports import csv_safe, csv_stream
from webhooks.catalogue import BATCH_COMPLETED
from webhooks.outbox import event_emit

RUNNING, COMPLETED = "running", "completed"
RESULT_COLUMNS = [
    "reference",
    "recharge_id",
    "recipient_number",
    "product_id",
    "status",
    "amount",
    "currency",
]


def batch_counts(*, batch: Batch) -> dict[str, int]:
    """How many of the batch's recharges are in each status (one grouped query)."""
    rows = (
        Recharge.objects.filter(order_id=batch.order_id)
        .values_list("status")
        .annotate(n=Count("id"))
        .order_by()
    )
    return {status: n for status, n in rows}


def batch_finished_at(*, batch: Batch) -> datetime | None:
    """When the batch's last recharge moved (every one final: when the batch completed). A
    test-mode recharge that was processing moved when its 10 seconds were up
    (``sandbox_ready_at``), whenever the settlement writes it: the time never changes."""
    moved = Coalesce("sandbox_ready_at", "updated_at")
    return Recharge.objects.filter(order_id=batch.order_id).aggregate(at=Max(moved))["at"]


def batch_object(*, batch: Batch, counts: dict[str, int] | None = None) -> dict[str, Any]:
    """The batch in its wire shape (docs/contract.md §13)."""
    counts = batch_counts(batch=batch) if counts is None else counts
    final = sum(n for status, n in counts.items() if status in FINAL)
    done = batch.completed_at is not None or final == batch.recharge_count
    # Every recharge final but not yet marked (``batches_complete`` runs every few seconds):
    # completed since its last recharge was, the time the mark will keep.
    completed_at = batch.completed_at or (batch_finished_at(batch=batch) if done else None)
    order = batch.order
    return {
        "id": batch.public_id,
        "object": "batch",
        "status": COMPLETED if done else RUNNING,
        "orderId": order.public_id,
        "total": f"{order.total:.2f}",
        "currency": order.currency,
        "livemode": batch.livemode,
        "counts": counts,
        "recharges": batch.recharge_count,
        "progress": round(final / batch.recharge_count, 4) if batch.recharge_count else 1.0,
        "createdAt": batch.created_at.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "completedAt": completed_at.strftime("%Y-%m-%dT%H:%M:%SZ") if completed_at else None,
    }


def batch_place(
    *,
    account: Account,
    lines: list[LineRequest],
    references: list[str],
    currency: str,
    api_key=None,
    user: User | None = None,
    idempotency_key: str | None,
    request_fingerprint: str = "",
    request_id: str | None = None,
    promotion_wait: bool = True,
) -> IdempotentReply:
    """Place a validated batch: one order paid from the wallet (402 when it cannot cover the
    whole batch; the per-request unit limit of single orders does not apply), then 202."""
    livemode = api_key.livemode if api_key is not None else True

    def operation() -> tuple[int, dict[str, Any]]:
        order = order_place_with_wallet(
            account=account,
            livemode=livemode,
            channel=Order.Channel.BATCH,
            lines=lines,
            currency=currency,
            user=user,
            api_key=api_key,
            references=references,
            promotion_wait=promotion_wait,
            idempotency_key=idempotency_key or "",
        )
        count = sum(line.quantity for line in lines)
        batch = Batch.objects.create(
            account=account,
            livemode=livemode,
            order=order,
            recharge_count=count,
            created_by=user,
            api_key=api_key,
        )
        counts = batch_counts(batch=batch)  # sandbox outcomes are already settled here
        return 202, batch_object(batch=batch, counts=counts)

    return run_idempotent(
        account=account,
        livemode=livemode,
        key=idempotency_key,
        request_fingerprint=request_fingerprint,
        operation=operation,
        request_id=request_id,
    )


def batches_complete(*, limit: int = 200) -> int:
    """Mark running batches whose recharges are all final ``completed`` and emit
    ``batch.completed`` for each, once (the row's ``completed_at`` guards it)."""
    done = 0
    for batch_id in Batch.objects.filter(completed_at__isnull=True).values_list("pk", flat=True)[
        :limit
    ]:
        with transaction.atomic():
            batch = (
                Batch.objects.select_for_update(skip_locked=True)
                .select_related("order")
                .filter(pk=batch_id, completed_at__isnull=True)
                .first()
            )
            if batch is None:
                continue
            pending = (
                Recharge.objects.filter(order_id=batch.order_id).exclude(status__in=FINAL).exists()
            )
            if pending:
                continue
            batch.completed_at = batch_finished_at(batch=batch) or timezone.now()
            batch.save(update_fields=["completed_at"])
            event_emit(
                account_id=batch.account_id,
                livemode=batch.livemode,
                event_type=BATCH_COMPLETED,
                obj=batch_object(batch=batch),
            )
            done += 1
    return done


def batch_results_csv(*, batch: Batch) -> Iterator[str]:
    """The results file, one row per recharge, streamed a few hundred rows at a time; a test
    batch's due ``processing`` rows as the success the sandbox will make them (nothing is
    written: recharges/sandbox.py)."""
    status = "status" if batch.livemode else sandbox_status(timezone.now())
    rows = (
        Recharge.objects.filter(order_id=batch.order_id)
        .order_by("id")
        .values_list(
            "reference",
            "public_id",
            "recipient_number",
            "product__public_id",
            status,
            "amount",
            "currency",
        )
        .iterator(chunk_size=2000)
    )
    return csv_stream(RESULT_COLUMNS, ([csv_safe(ref), *rest] for ref, *rest in rows))
