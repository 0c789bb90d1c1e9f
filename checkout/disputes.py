"""Disputes, early fraud warnings and refunds told by Stripe's signed events (docs/fraud.md;
contract: decisions section 16).

``charge.dispute.created``, ``charge.dispute.closed``, ``radar.early_fraud_warning.created``
and ``charge.refunded`` arrive on the Stripe webhook; ``checkout.services.stripe_event_handle``
records each event once by its id and, in the same transaction, calls ``stripe_dispute_apply``.
The event's signed object is trusted as it is: it names the PaymentIntent we created (and our
``paymentId``/``topupId`` in its metadata), so no call to Stripe is needed to find the payment.

Events may come in any order (a dispute closed before it was created, a warning after the
dispute): each Stripe object is one ``CardDispute`` row whose status only moves forward (a
warning, an open dispute, a closed one), and what each event does is idempotent (the
recharges cancelled once, the account frozen once per dispute or warning, a lost top-up's
debt posted once).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass
from decimal import Decimal

from django.db import transaction
from django.db.models import Q
from django.utils import timezone
from django.utils.translation import gettext as _

from accounts.models import Account, User
from accounts.services import email_queue_to_account
from books.services import LostDispute, books_dispute_record
from checkout.errors import CardPurchasesFrozen
from checkout.models import CardCheckout, CardDispute, CardFreeze, CardKeyFreeze
from emails.models import Email
from orders.models import OrderLine
from payments.errors import WebhookEventMalformed
from payments.services import payment_dispute_set
from recharges.processor import recharges_cancel_for_payment
from reseller.money import quantize
from wallet.models import TopUp
from wallet.services import wallet_dispute_debit

logger = logging.getLogger(__name__)

DISPUTE_CREATED = "charge.dispute.created"
DISPUTE_CLOSED = "charge.dispute.closed"
WARNING_CREATED = "radar.early_fraud_warning.created"
CHARGE_REFUNDED = "charge.refunded"
EVENTS = frozenset({DISPUTE_CREATED, DISPUTE_CLOSED, WARNING_CREATED, CHARGE_REFUNDED})

WARNING = "warning"  # the status a payment shows for an early fraud warning
# Stripe's dispute statuses that end it; any other is an open dispute.
DISPUTE_FINAL = frozenset({"won", "lost", "warning_closed", "prevented"})
LOST = "lost"
DISPUTED = "payment_disputed"  # the failure code of the recharges a dispute cancels


@dataclass(frozen=True)
class StripeObject:
    """What the handler reads of an event's object, checked."""

    event_type: str
    id: str
    charge_id: str
    payment_intent_id: str
    metadata: dict[str, str]
    status: str = ""
    amount_minor: int | None = None
    currency: str = ""
    reason: str = ""
    fee_minor: int | None = None

    @property
    def kind(self) -> str:
        return CardDispute.Kind.WARNING if self.event_type == WARNING_CREATED else "dispute"


def _malformed(field: str) -> WebhookEventMalformed:
    return WebhookEventMalformed(
        fields=[{"field": f"data.object.{field}", "code": "invalid", "message": "Unexpected type."}]
    )


def _id(obj: dict, name: str, *, required: bool = False) -> str:
    """An id field: a string, or the object expanded (its ``id``), at most 128 characters."""
    value = obj.get(name)
    if isinstance(value, dict):
        value = value.get("id")
    if value is None and not required:
        return ""
    if not isinstance(value, str) or not value or len(value) > 128:
        raise _malformed(name)
    return value


def _text(obj: dict, name: str, limit: int) -> str:
    value = obj.get(name)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise _malformed(name)
    return value[:limit]


def _minor(obj: dict, name: str) -> int | None:
    value = obj.get(name)
    if value is None:
        return None
    if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value < 10**12:
        raise _malformed(name)
    return value


def _fee(obj: dict) -> int | None:
    """Stripe's dispute fee: the fees of the dispute's balance transactions, when given."""
    transactions = obj.get("balance_transactions")
    if not isinstance(transactions, list):
        return None
    fees = [
        item["fee"]
        for item in transactions
        if isinstance(item, dict) and isinstance(item.get("fee"), int)
    ]
    return sum(fees) if fees else None


def stripe_object(event: dict) -> StripeObject:
    """The checked object of one of ``EVENTS``; WebhookEventMalformed (400) otherwise."""
    obj = event["data"]["object"]
    kind = event["type"]
    metadata = obj.get("metadata") or {}
    metadata = {str(k): v for k, v in metadata.items() if isinstance(v, str) and len(v) <= 64}
    if kind == CHARGE_REFUNDED:
        return StripeObject(
            event_type=kind,
            id=_id(obj, "id", required=True),
            charge_id=_id(obj, "id", required=True),
            payment_intent_id=_id(obj, "payment_intent"),
            metadata=metadata,
            amount_minor=_minor(obj, "amount_refunded"),
            currency=_text(obj, "currency", 3).upper(),
        )
    if kind == WARNING_CREATED:
        return StripeObject(
            event_type=kind,
            id=_id(obj, "id", required=True),
            charge_id=_id(obj, "charge"),
            payment_intent_id=_id(obj, "payment_intent"),
            metadata=metadata,
            status=WARNING,
            reason=_text(obj, "fraud_type", 64),
        )
    status = _text(obj, "status", 32)
    if not status:
        raise _malformed("status")
    return StripeObject(
        event_type=kind,
        id=_id(obj, "id", required=True),
        charge_id=_id(obj, "charge"),
        payment_intent_id=_id(obj, "payment_intent"),
        metadata=metadata,
        status=status,
        amount_minor=_minor(obj, "amount"),
        currency=_text(obj, "currency", 3).upper(),
        reason=_text(obj, "reason", 64),
        fee_minor=_fee(obj),
    )


def _major(minor: int | None) -> Decimal | None:
    return None if minor is None else quantize(Decimal(minor) / 100)


def checkout_for(obj: StripeObject) -> CardCheckout | None:
    """Our checkout of the charge: by the PaymentIntent we created (stored on the checkout,
    the payment, or the top-up), else by our ids in the metadata."""
    if pi := obj.payment_intent_id:
        found = (
            CardCheckout.objects.filter(
                Q(payment_intent_id=pi)
                | Q(payment__payment_intent_id=pi)
                | Q(topup__external_reference=pi, topup__method=TopUp.Method.CARD)
            )
            .order_by("pk")
            .first()
        )
        if found is not None:
            return found
    if payment_id := obj.metadata.get("paymentId"):
        return CardCheckout.objects.filter(payment__public_id=payment_id).first()
    if topup_id := obj.metadata.get("topupId"):
        return CardCheckout.objects.filter(topup__public_id=topup_id).first()
    return None


def _rank(kind: str, status: str) -> int:
    """How far a dispute or warning has gone: a status never moves back."""
    if kind == CardDispute.Kind.WARNING:
        return 0
    return 2 if status in DISPUTE_FINAL else 1


def stripe_dispute_apply(*, event_id: str, obj: StripeObject, checkout: CardCheckout) -> None:
    """Apply one recorded event to its (locked) checkout, in the caller's transaction."""
    if obj.event_type == CHARGE_REFUNDED:
        refunded = obj.amount_minor
        logger.info(
            "webhook %s: charge %s of %s refunded %s (minor units); nothing to do",
            event_id,
            obj.charge_id,
            checkout.public_id,
            refunded,
        )
        return
    dispute, first = _dispute_record(obj, checkout)
    if checkout.payment_id:
        # The recharges first: each takes its row lock, then the payment's (the processor's
        # order), before the payment's own row is written below.
        recharges_cancel_for_payment(
            payment_id=checkout.payment_id,
            code=DISPUTED,
            message="The card payment is disputed or reported as fraud; refunded to the card.",
        )
        shown = _dispute_shown(checkout)
        payment_dispute_set(
            payment_id=checkout.payment_id,
            status=shown.status,
            amount=shown.amount if shown.kind == CardDispute.Kind.DISPUTE else None,
            reason=shown.reason,
        )
    elif checkout.topup_id and dispute.kind == CardDispute.Kind.DISPUTE:
        _topup_dispute(dispute, checkout)
    if dispute.kind == CardDispute.Kind.DISPUTE and dispute.status == LOST:
        _books_lost(dispute, checkout)
    if first:
        card_purchases_freeze(
            account_id=checkout.account_id,
            reason=dispute.kind,
            cause=dispute.stripe_id,
            reference=checkout.public_id,
        )
        card_keys_freeze(checkout=checkout, reason=dispute.kind, cause=dispute.stripe_id)


def _dispute_record(obj: StripeObject, checkout: CardCheckout) -> tuple[CardDispute, bool]:
    """The dispute's (or warning's) row, created or moved forward; True when created now."""
    now = timezone.now()
    row = CardDispute.objects.filter(stripe_id=obj.id).first()
    if row is None:
        row = CardDispute.objects.create(
            stripe_id=obj.id,
            kind=obj.kind,
            checkout=checkout,
            account_id=checkout.account_id,
            charge_id=obj.charge_id,
            status=obj.status,
            amount=_major(obj.amount_minor),
            currency=obj.currency,
            reason=obj.reason,
            fee=_major(obj.fee_minor),
            created_at=now,
            updated_at=now,
        )
        return row, True
    fields: dict = {"updated_at": now}
    # Forward only; a closed dispute keeps its outcome (its books may be written already).
    if row.status not in DISPUTE_FINAL and _rank(row.kind, obj.status) >= _rank(
        row.kind, row.status
    ):
        fields["status"] = obj.status
    if obj.amount_minor is not None:
        fields["amount"] = _major(obj.amount_minor)
        fields["currency"] = obj.currency or row.currency
    if obj.reason:
        fields["reason"] = obj.reason
    if obj.fee_minor is not None:
        fields["fee"] = _major(obj.fee_minor)
    CardDispute.objects.filter(pk=row.pk).update(**fields)
    row.refresh_from_db()
    return row, False


def _dispute_shown(checkout: CardCheckout) -> CardDispute:
    """What the payment shows: a dispute over a warning, the furthest gone, the latest."""
    rows = list(CardDispute.objects.filter(checkout=checkout).order_by("pk"))
    return max(rows, key=lambda row: (row.kind == "dispute", _rank(row.kind, row.status), row.pk))


def _topup_dispute(dispute: CardDispute, checkout: CardCheckout) -> None:
    """A lost dispute of a card top-up: the wallet gives back what the bank took, once, even
    below zero when the money was spent (the wallet then owes it)."""
    topup = checkout.topup
    if dispute.status != "lost" or topup is None or topup.status != TopUp.Status.APPROVED:
        return
    amount = min(dispute.amount or topup.amount, topup.amount)
    entry, created = wallet_dispute_debit(
        wallet_id=topup.wallet_id,
        amount=amount,
        reference=topup.public_id,
        memo=f"dispute {dispute.stripe_id} lost",
    )
    if created:
        logger.warning(
            "top-up %s: dispute %s lost, wallet debited %s (balance %s)",
            topup.public_id,
            dispute.stripe_id,
            amount,
            entry.balance_after,
        )


def dispute_amount(dispute: CardDispute) -> Decimal:
    """What a lost dispute took back: its amount, else (not told) the whole charge."""
    return dispute.amount if dispute.amount is not None else dispute.checkout.amount


def dispute_currency(dispute: CardDispute) -> str:
    return (dispute.currency or dispute.checkout.currency).upper()


def _books_lost(dispute: CardDispute, checkout: CardCheckout) -> None:
    """A lost dispute in the books (docs/books.md): the amount the bank took back, and
    Stripe's fee once an event told it; each journal once, whichever event comes last."""
    written = books_dispute_record(
        dispute=LostDispute(
            key=str(dispute.pk),
            reference=checkout.public_id,
            customer_id=checkout.account_id,
            amount=dispute_amount(dispute),
            currency=dispute_currency(dispute),
            fee=dispute.fee,
            memo=f"dispute {dispute.stripe_id} lost ({dispute.reason or 'no reason given'})",
        )
    )
    if written:
        logger.warning("dispute %s lost: booked %s", dispute.stripe_id, ", ".join(written))


# -- freezes --------------------------------------------------------------------------------


def card_purchases_frozen(*, account: Account) -> bool:
    return CardFreeze.objects.filter(account=account, unfrozen_at__isnull=True).exists()


def card_purchases_check(*, account: Account) -> None:
    """Refuse (403 ``card_purchases_frozen``) a card purchase of a frozen account."""
    if card_purchases_frozen(account=account):
        raise CardPurchasesFrozen()


def card_purchases_freeze(*, account_id: int, reason: str, cause: str, reference: str) -> bool:
    """Freeze the account's card purchases until staff unfreeze them, and tell its owner, in
    their language. False when they were frozen already (nothing sent again)."""
    now = timezone.now()
    freeze, created = CardFreeze.objects.get_or_create(
        account_id=account_id, defaults={"reason": reason, "cause": cause, "frozen_at": now}
    )
    if not created:
        freeze = CardFreeze.objects.select_for_update().get(pk=freeze.pk)
        if freeze.frozen:
            return False
        CardFreeze.objects.filter(pk=freeze.pk).update(
            reason=reason, cause=cause, frozen_at=now, unfrozen_at=None, unfrozen_by=None
        )
    email_queue_to_account(
        account_id=account_id,
        kind=Email.Kind.CARD_PURCHASES_FROZEN,
        context={"reason": reason, "reference": reference},
    )
    logger.warning("card purchases of account %s frozen: %s %s", account_id, reason, cause)
    return True


@transaction.atomic
def card_purchases_unfreeze(*, account: Account, by: User | None = None) -> bool:
    """Staff reviewed the account: card purchases are allowed again (even when it had been
    blocked), and so are the cards and numbers its disputes and warnings froze, unless blocked
    for good. False when the account was not frozen."""
    now = timezone.now()
    CardKeyFreeze.objects.filter(account=account, status=CardKeyFreeze.Status.FROZEN).update(
        status=CardKeyFreeze.Status.UNFROZEN, reviewed_at=now, reviewed_by=by
    )
    return bool(
        CardFreeze.objects.filter(account=account, unfrozen_at__isnull=True).update(
            unfrozen_at=now, unfrozen_by=by, blocked_at=None
        )
    )


@transaction.atomic
def card_purchases_block(*, account: Account, by: User | None = None) -> bool:
    """Staff reviewed the account and block its card purchases for good (frozen, and off the
    review queue). False when they were blocked already."""
    now = timezone.now()
    freeze, _created = CardFreeze.objects.get_or_create(
        account=account, defaults={"reason": "staff", "frozen_at": now}
    )
    return bool(
        CardFreeze.objects.filter(pk=freeze.pk, blocked_at__isnull=True).update(
            blocked_at=now, unfrozen_at=None, unfrozen_by=by
        )
    )


# -- cards and numbers ----------------------------------------------------------------------


def _numbers_of(checkout: CardCheckout) -> list[str]:
    if not checkout.payment_id:
        return []
    return sorted(
        set(
            OrderLine.objects.filter(order__payment__pk=checkout.payment_id).values_list(
                "recipient_number", flat=True
            )
        )
    )


def card_keys_freeze(*, checkout: CardCheckout, reason: str, cause: str) -> list[CardKeyFreeze]:
    """Freeze the disputed payment's card and its recipient numbers for card purchases of every
    account, until staff review them; a card or number blocked for good or frozen already
    stays as it is. The rows frozen now."""
    keys = [(CardKeyFreeze.Kind.NUMBER, number) for number in _numbers_of(checkout)]
    if checkout.card_fingerprint:
        keys.insert(0, (CardKeyFreeze.Kind.CARD, checkout.card_fingerprint))
    now = timezone.now()
    frozen = []
    for kind, value in keys:
        fields = {
            "status": CardKeyFreeze.Status.FROZEN,
            "reason": reason,
            "cause": cause,
            "account_id": checkout.account_id,
            "checkout": checkout,
            "frozen_at": now,
            "reviewed_at": None,
            "reviewed_by": None,
        }
        row, created = CardKeyFreeze.objects.get_or_create(kind=kind, value=value, defaults=fields)
        if not created:
            updated = CardKeyFreeze.objects.filter(
                pk=row.pk, status=CardKeyFreeze.Status.UNFROZEN
            ).update(**fields)
            if not updated:
                continue
        frozen.append(row)
        logger.warning("card purchases with %s %s frozen: %s %s", kind, value, reason, cause)
    return frozen


def card_keys_check(*, numbers: Iterable[str] = (), fingerprint: str = "") -> None:
    """Refuse (403 ``card_purchases_frozen``) a card purchase with a frozen or blocked card, or
    to a frozen or blocked recipient number, whichever account buys."""
    wanted = Q(kind=CardKeyFreeze.Kind.NUMBER, value__in=list(numbers))
    if fingerprint:
        wanted |= Q(kind=CardKeyFreeze.Kind.CARD, value=fingerprint)
    found = (
        CardKeyFreeze.objects.filter(wanted)
        .exclude(status=CardKeyFreeze.Status.UNFROZEN)
        .order_by("kind", "value")
        .first()
    )
    if found is None:
        return
    if found.kind == CardKeyFreeze.Kind.CARD:
        raise CardPurchasesFrozen(
            _(
                "This card cannot pay here after a dispute or a fraud warning on a payment made "
                "with it. Nothing was charged; use another payment method or contact us."
            )
        )
    raise CardPurchasesFrozen(
        _(
            "Card purchases of top-ups to %(number)s are frozen after a dispute or a fraud "
            "warning on one. Nothing was charged; contact us if this is your number."
        )
        % {"number": found.value}
    )


@transaction.atomic
def card_key_review(*, freeze_id: int, block: bool, by: User | None = None) -> CardKeyFreeze:
    """Staff reviewed a frozen card or number: unfrozen, or blocked for good."""
    row = CardKeyFreeze.objects.select_for_update().get(pk=freeze_id)
    status = CardKeyFreeze.Status.BLOCKED if block else CardKeyFreeze.Status.UNFROZEN
    CardKeyFreeze.objects.filter(pk=row.pk).update(
        status=status, reviewed_at=timezone.now(), reviewed_by=by
    )
    row.refresh_from_db()
    return row
