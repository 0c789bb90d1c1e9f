"""The one writer of payments (``Payment`` rows): created with their order, moved by the card
flow (intents, capture, failure, expiry) and by refunds of failed recharges."""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal

from django.db import transaction
from django.utils import timezone

from payments.models import Payment

S = Payment.Status


def payment_create(payment: Payment) -> Payment:
    """Write a payment built with its (saved) order."""
    payment.save(force_insert=True)
    return payment


def payment_lock(*, payment_id: int) -> Payment:
    """Take the payment's row lock for the rest of the transaction and read it fresh."""
    return Payment.objects.select_for_update(of=("self",)).get(pk=payment_id)


def payment_add_refunded(payment: Payment, amount: Decimal) -> None:
    """Move a (locked) payment's refunded amount by ``amount`` (negative when a staff retry
    takes a refund back); its status follows: captured, partially refunded or refunded."""
    payment.refunded_amount += amount
    if payment.refunded_amount <= 0:
        payment.status = S.CAPTURED
    elif payment.refunded_amount >= payment.amount:
        payment.status = S.REFUNDED
    else:
        payment.status = S.PARTIALLY_REFUNDED
    payment.updated_at = timezone.now()
    payment.save(update_fields=["refunded_amount", "status", "updated_at"])


def payment_intents_set(
    *, payment_id: int, setup_intent_id: str | None = None, payment_intent_id: str | None = None
) -> None:
    """Record the card processor's objects of a card payment."""
    fields: dict = {"updated_at": timezone.now()}
    if setup_intent_id is not None:
        fields["setup_intent_id"] = setup_intent_id
    if payment_intent_id is not None:
        fields["payment_intent_id"] = payment_intent_id
    Payment.objects.filter(pk=payment_id).update(**fields)


def payment_expiry_set(payment: Payment, *, expires_at: datetime) -> None:
    """When a card payment's priced order stops being valid."""
    Payment.objects.filter(pk=payment.pk).update(expires_at=expires_at)
    payment.expires_at = expires_at


@transaction.atomic(savepoint=False)
def payment_capture(*, payment_id: int, payment_intent_id: str, now: datetime) -> Payment:
    """The card was charged: the payment is captured (locked, in the caller's transaction)."""
    payment = payment_lock(payment_id=payment_id)
    payment.status = S.CAPTURED
    payment.captured_at = now
    payment.payment_intent_id = payment_intent_id
    payment.failure_code = ""
    payment.updated_at = now
    payment.save(
        update_fields=["status", "captured_at", "payment_intent_id", "failure_code", "updated_at"]
    )
    return payment


def payment_card_failed(*, payment_id: int, code: str) -> None:
    """A card attempt failed: a payment not captured shows the failure."""
    Payment.objects.filter(pk=payment_id, status__in=[S.PENDING, S.FAILED]).update(
        status=S.FAILED, failure_code=code, updated_at=timezone.now()
    )


def payment_attempt_started(*, payment_id: int) -> None:
    """A new card attempt of a payment whose last one failed: it is pending again (what its
    buyer reads while the bank answers, 3-D Secure included)."""
    Payment.objects.filter(pk=payment_id, status=S.FAILED).update(
        status=S.PENDING, failure_code="", updated_at=timezone.now()
    )


def payment_expire(*, payment_id: int) -> int:
    """A pending card payment whose price hold ran out: 1 if it expired now, else 0."""
    return Payment.objects.filter(pk=payment_id, status=S.PENDING).update(
        status=S.EXPIRED, updated_at=timezone.now()
    )


def payment_cancel(*, payment_id: int) -> int:
    """A card payment its buyer cancelled before it was paid (pending, or failed and still
    payable): 1 if it was cancelled now, else 0."""
    return Payment.objects.filter(pk=payment_id, status__in=[S.PENDING, S.FAILED]).update(
        status=S.CANCELED, updated_at=timezone.now()
    )


def payment_discard(*, payment_id: int) -> int:
    """Remove a card payment that never reached Stripe; returns its order's id (the caller
    removes the order)."""
    order_id = Payment.objects.values_list("order_id", flat=True).get(pk=payment_id)
    Payment.objects.filter(pk=payment_id).delete()
    return order_id


def payment_dispute_set(
    *, payment_id: int, status: str, amount: Decimal | None, reason: str
) -> None:
    """What a card payment shows of the dispute (or early fraud warning) on its charge."""
    Payment.objects.filter(pk=payment_id).update(
        dispute_status=status[:32],
        dispute_amount=amount,
        dispute_reason=reason[:64],
        updated_at=timezone.now(),
    )
