"""Card checkout and card top-ups (docs/contract.md §4): prepare, checkout, webhooks.

One flow serves both things a card pays for: an order (a pending card ``Payment`` whose
recharges are queued when the money is taken) and a wallet top-up (a pending ``TopUp``
approved when the money is taken). ``CardCheckout`` holds the Stripe side of either.

- prepare: price, write the pending payment (or top-up) and its checkout and commit; then
  create the SetupIntent and attach it (a Stripe failure removes what was written).
- checkout: under the checkout's row lock, re-check its state and record the attempt; commit;
  create+confirm the PaymentIntent with the card the browser confirmed; then, under the lock
  again, complete on ``succeeded``. Completing twice completes once.
- webhook: ``payment_intent.succeeded`` completes the same checkout when the browser never came
  back; ``payment_intent.payment_failed`` marks the attempt failed (the checkout stays payable).

Stripe is never called while a row lock is held (docs/payments.md): lock, decide, record the
intent, commit; call Stripe; apply the answer under the lock.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import timedelta
from decimal import Decimal

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import Q
from django.utils import timezone
from django.utils.translation import gettext as _

from accounts.models import Account, User
from accounts.services import guest_account
from checkout import disputes, limits
from checkout.errors import (
    CartEmpty,
    PaymentMethodRequired,
    PaymentNotCancellable,
    PaymentNotPayable,
    QuoteExpired,
)
from checkout.models import CardCheckout, StripeEvent
from orders.errors import CurrencyMismatch
from orders.models import Cart, Order
from orders.pricing import LineRequest, line_requests, price_order
from orders.selectors import cart_items
from orders.services import (
    cart_items_remove,
    order_create,
    order_discard,
    order_recharges_start,
)
from payments import gateway
from payments.errors import CardAuthenticationFailed, CardDeclined, card_declined
from payments.models import Payment
from payments.receipts import guest_receipt_path
from payments.services import (
    payment_attempt_started,
    payment_cancel,
    payment_capture,
    payment_card_failed,
    payment_discard,
    payment_expire,
    payment_expiry_set,
    payment_intents_set,
)
from reseller.errors import ApplicationError, NotFound
from reseller.money import quantize, to_minor_units
from wallet.models import TopUp
from wallet.services import (
    topup_approve,
    topup_discard,
    topup_reject,
    topup_request,
    wallet_get_or_create,
)

logger = logging.getLogger(__name__)


def _validity() -> timedelta:
    return timedelta(minutes=settings.CARD_CHECKOUT_VALIDITY_MINUTES)


@dataclass(frozen=True)
class Prepared:
    checkout: CardCheckout
    setup_client_secret: str


@dataclass(frozen=True)
class CheckoutResult:
    """What checkout answers: ``succeeded``, ``requires_action`` (3-D Secure) or ``processing``.

    A failed attempt is committed first and then raised (``error``) by the caller, so the
    checkout stays payable.
    """

    checkout: CardCheckout
    status: str
    client_secret: str = ""
    error: ApplicationError | None = None


# -- prepare --------------------------------------------------------------------------------


def _attach_setup_intent(checkout: CardCheckout, *, discard_on_failure: bool) -> Prepared:
    """Create a SetupIntent for a committed checkout (no transaction open) and attach it.

    ``discard_on_failure``: a checkout just prepared is removed again when Stripe fails, so a
    failed prepare leaves nothing behind (its order and payment, or its top-up, go with it).
    """
    try:
        setup = gateway.setup_intent_create(
            metadata={
                _metadata_key(checkout): checkout.public_id,
                "account": str(checkout.account_id),
            }
        )
    except ApplicationError:
        if discard_on_failure:
            _discard(checkout)
        raise
    now = timezone.now()
    with transaction.atomic():
        CardCheckout.objects.filter(pk=checkout.pk).update(setup_intent_id=setup.id, updated_at=now)
        if checkout.payment_id:
            payment_intents_set(payment_id=checkout.payment_id, setup_intent_id=setup.id)
    checkout.setup_intent_id = setup.id
    checkout.updated_at = now
    return Prepared(checkout=checkout, setup_client_secret=setup.client_secret)


@transaction.atomic
def _discard(checkout: CardCheckout) -> None:
    """Remove a checkout that never reached Stripe, with what it was about to pay for."""
    CardCheckout.objects.filter(pk=checkout.pk).delete()
    if checkout.payment_id:
        order_discard(order_id=payment_discard(payment_id=checkout.payment_id))
    else:
        topup_discard(topup_id=checkout.topup_id)  # type: ignore[arg-type]


def _metadata_key(checkout: CardCheckout) -> str:
    return "paymentId" if checkout.payment_id else "topupId"


def card_payment_prepare(
    *,
    account: Account,
    user: User | None,
    lines: list[LineRequest] | None = None,
    cart: Cart | None = None,
    currency: str | None = None,
    promotion_wait: bool = True,
    client_address: str = "",
) -> Prepared:
    """Price an order (given lines, or a cart's items) in the wallet currency and open a
    pending card payment with its SetupIntent. A Stripe failure leaves nothing behind.
    ``promotion_wait``: the order's ``whenPromotionScheduled`` ("wait": True);
    ``client_address``: the client's, for the per-address card limits."""
    with transaction.atomic():
        checkout = _payment_checkout_create(
            account=account,
            user=user,
            lines=lines,
            cart=cart,
            currency=currency,
            promotion_wait=promotion_wait,
            client_address=client_address,
        )
    return _attach_setup_intent(checkout, discard_on_failure=True)


@dataclass
class Guest:
    """A buyer without an account: the receipt's address and language, and the client
    address the guest limits count (docs/fraud.md)."""

    email: str
    language: str
    client_address: str = ""


def card_guest_prepare(
    *, guest: Guest, lines: list[LineRequest], promotion_wait: bool = True
) -> Prepared:
    """A guest's card payment of ``lines`` (docs/site.md): an order of the house guest
    account, priced as any visitor sees it, with the guest's email on its checkout. The guest
    caps (docs/fraud.md) are checked here and again, with the card, at checkout."""
    with transaction.atomic():
        checkout = _payment_checkout_create(
            account=guest_account(),
            user=None,
            lines=lines,
            cart=None,
            currency=None,
            promotion_wait=promotion_wait,
            guest=guest,
        )
    return _attach_setup_intent(checkout, discard_on_failure=True)


def _payment_checkout_create(
    *,
    account: Account,
    user: User | None,
    lines: list[LineRequest] | None,
    cart: Cart | None,
    currency: str | None,
    promotion_wait: bool = True,
    client_address: str = "",
    guest: Guest | None = None,
) -> CardCheckout:
    disputes.card_purchases_check(account=account)
    wallet = wallet_get_or_create(account=account)
    if currency and currency.upper() != wallet.currency:
        raise CurrencyMismatch(
            _("baseCurrency %(given)s differs from the account currency %(wallet)s.")
            % {"given": currency.upper(), "wallet": wallet.currency}
        )
    item_ids: list[int] = []
    if lines is None:
        assert cart is not None
        items = list(cart_items(cart=cart))
        item_ids = [item.pk for item in items]
        lines = line_requests(items)
    if not lines:
        raise CartEmpty()
    priced = price_order(account=account, lines=lines, currency=wallet.currency)
    # A card limit already reached is refused before anything is written (docs/fraud.md);
    # checkout counts again under the limits' locks, with the card.
    limits.purchase_check(
        limits.Purchase(
            account=account,
            amount_eur=limits.amount_in_eur(priced.total, priced.currency),
            numbers=limits.numbers_of(priced.lines),
            address=client_address or (guest.client_address if guest else ""),
            guest_email=guest.email if guest else "",
        )
    )
    _order, payment, _lines = order_create(
        account=account,
        livemode=True,
        channel=Order.Channel.CARD,
        priced=priced,
        user=user,
        api_key=None,
        payment_status=Payment.Status.PENDING,
        method=Payment.Method.CARD,
        wallet=None,
        promotion_wait=promotion_wait,
    )
    expires_at = timezone.now() + _validity()
    payment_expiry_set(payment, expires_at=expires_at)
    return CardCheckout.objects.create(
        account=account,
        payment=payment,
        cart=cart,
        cart_item_ids=item_ids,
        amount=payment.amount,
        currency=payment.currency,
        expires_at=expires_at,
        guest_email=guest.email if guest else "",
        guest_language=guest.language if guest else "",
        client_address=(guest.client_address or None) if guest else None,
    )


def card_topup_prepare(
    *, account: Account, user: User | None, amount: Decimal, client_address: str = ""
) -> Prepared:
    """A pending card top-up of the live wallet with its SetupIntent; the card limits count
    it as they count a payment (docs/fraud.md)."""
    disputes.card_purchases_check(account=account)
    limits.purchase_check(
        limits.Purchase(
            account=account,
            amount_eur=limits.amount_in_eur(
                quantize(amount), wallet_get_or_create(account=account).currency
            ),
            address=client_address,
        )
    )
    with transaction.atomic():
        topup = topup_request(
            account=account, amount=quantize(amount), method=TopUp.Method.CARD, by=user
        )
        checkout = CardCheckout.objects.create(
            account=account,
            topup=topup,
            amount=topup.amount,
            currency=topup.currency,
            expires_at=timezone.now() + _validity(),
        )
    return _attach_setup_intent(checkout, discard_on_failure=True)


def card_checkout_renew_setup(*, checkout: CardCheckout, guest_email: str = "") -> Prepared:
    """A fresh SetupIntent for another card after a failed attempt (same payment, same price).
    A guest's ``guest_email`` is the address the page reads now: a corrected one is where the
    receipt goes (and what the guest limits count at checkout, ``limits_reserve``)."""
    checkout = CardCheckout.objects.select_related("payment", "topup").get(pk=checkout.pk)
    if checkout.completed_at is not None:
        raise PaymentNotPayable()
    if checkout.expires_at <= timezone.now():
        raise QuoteExpired()
    disputes.card_purchases_check(account=checkout.account)
    if checkout.guest_email and guest_email and guest_email != checkout.guest_email:
        CardCheckout.objects.filter(pk=checkout.pk, completed_at__isnull=True).update(
            guest_email=guest_email
        )
        checkout.guest_email = guest_email
    return _attach_setup_intent(checkout, discard_on_failure=False)


# -- reads ----------------------------------------------------------------------------------


def card_checkout_for_payment(*, account: Account, payment_id: str) -> CardCheckout:
    checkout = (
        CardCheckout.objects.select_related("payment", "topup")
        .filter(account=account, payment__public_id=payment_id)
        .first()
    )
    if checkout is None:
        raise NotFound()
    return checkout


def card_checkout_for_guest(*, payment_id: str) -> CardCheckout:
    """A guest's checkout (the caller checked that this browser prepared it)."""
    checkout = (
        CardCheckout.objects.select_related("payment", "topup")
        .filter(payment__public_id=payment_id)
        .exclude(guest_email="")
        .first()
    )
    if checkout is None:
        raise NotFound()
    return checkout


def card_checkout_for_topup(*, account: Account, topup_id: str) -> CardCheckout:
    checkout = (
        CardCheckout.objects.select_related("payment", "topup")
        .filter(account=account, topup__public_id=topup_id)
        .first()
    )
    if checkout is None:
        raise NotFound()
    return checkout


def _lock(pk: int) -> CardCheckout:
    return (
        CardCheckout.objects.select_for_update(of=("self",))
        .select_related("payment", "topup")
        .get(pk=pk)
    )


# -- checkout -------------------------------------------------------------------------------


# An attempt whose Stripe call has not come back after this long is taken to be dead: the
# next checkout sends it again (same Stripe idempotency key, so never a second charge).
ATTEMPT_IN_FLIGHT = timedelta(seconds=60)


@dataclass(frozen=True)
class _Step:
    """What checkout decided under the lock, to do on Stripe once the lock is released."""

    # "done", "in_flight", "follow" (an existing PaymentIntent), "confirm", or "end" (a
    # PaymentIntent still waiting for the bank when the price hold ran out)
    kind: str
    payment_intent_id: str = ""
    setup_intent_id: str = ""


def card_checkout(*, checkout: CardCheckout, client_address: str = "") -> CheckoutResult:
    """Take the money with the card the browser confirmed; safe to call any number of times.

    Three steps, so Stripe is never called under a row lock: decide and record the attempt
    under the checkout's lock; call Stripe; apply its answer under the lock. A concurrent
    call meanwhile answers ``processing`` (and Stripe's idempotency key covers a retry).
    """
    with transaction.atomic():
        step = _checkout_decide(_lock(checkout.pk))
    if step.kind == "done":
        return _result(checkout, "succeeded")
    if step.kind == "in_flight":
        return _result(checkout, "processing")
    if step.kind == "end":  # waiting for the bank past the hold: it ends like any other
        ended = card_checkout_end(checkout=checkout, reason=EXPIRED)
        if ended == COMPLETED:
            return _result(checkout, "succeeded")
        if ended == IN_FLIGHT:
            return _result(checkout, "processing")
        raise QuoteExpired()
    if step.kind == "follow":
        intent = gateway.payment_intent_get(payment_intent_id=step.payment_intent_id)
    else:
        intent_or_error = _confirm_on_stripe(
            checkout, setup_intent_id=step.setup_intent_id, client_address=client_address
        )
        if isinstance(intent_or_error, ApplicationError):
            with transaction.atomic():
                locked = _lock(checkout.pk)
                if locked.setup_intent_id == step.setup_intent_id:
                    _attempt_failed(locked, code=intent_or_error.code)
            raise intent_or_error
        intent = intent_or_error
    with transaction.atomic():
        locked = _lock(checkout.pk)
        if step.kind == "confirm" and locked.completed_at is None:
            now = timezone.now()
            locked.payment_intent_id = intent.id
            locked.attempt_started_at = None
            locked.updated_at = now
            locked.save(update_fields=["payment_intent_id", "attempt_started_at", "updated_at"])
            if locked.payment_id:
                payment_intents_set(payment_id=locked.payment_id, payment_intent_id=intent.id)
        result = _follow(locked, intent)
    if result.error is not None:
        raise result.error
    return _result(checkout, result.status, result.client_secret)


def _result(checkout: CardCheckout, status: str, client_secret: str = "") -> CheckoutResult:
    checkout.refresh_from_db()
    return CheckoutResult(checkout=checkout, status=status, client_secret=client_secret)


def _checkout_decide(checkout: CardCheckout) -> _Step:
    """Under the lock: is this checkout payable, and what is to be asked of Stripe?"""
    if checkout.completed_at is not None:
        return _Step("done")
    if checkout.payment_id and checkout.payment.status not in (  # type: ignore[operator, union-attr]
        Payment.Status.PENDING,
        Payment.Status.FAILED,
    ):
        raise PaymentNotPayable()
    if checkout.topup_id and checkout.topup.status != TopUp.Status.PENDING:  # type: ignore[union-attr]
        raise PaymentNotPayable()
    now = timezone.now()
    if checkout.payment_intent_id:  # an attempt made: where is it now?
        if checkout.expires_at <= now:
            return _Step("end", payment_intent_id=checkout.payment_intent_id)
        return _Step("follow", payment_intent_id=checkout.payment_intent_id)
    if checkout.attempt_started_at and checkout.attempt_started_at > now - ATTEMPT_IN_FLIGHT:
        return _Step("in_flight")
    if checkout.expires_at <= now:
        raise QuoteExpired()
    if not checkout.setup_intent_id:
        raise PaymentMethodRequired()
    # Prepared before a dispute froze the account: not charged now either.
    disputes.card_purchases_check(account=checkout.account)
    checkout.attempts += 1
    checkout.attempt_started_at = now
    checkout.updated_at = now
    checkout.save(update_fields=["attempts", "attempt_started_at", "updated_at"])
    if checkout.payment_id:  # after a failed attempt: pending again while this one runs
        payment_attempt_started(payment_id=checkout.payment_id)
    return _Step("confirm", setup_intent_id=checkout.setup_intent_id)


def _confirm_on_stripe(
    checkout: CardCheckout, *, setup_intent_id: str, client_address: str = ""
) -> gateway.IntentResult | ApplicationError:
    """Create and confirm the PaymentIntent (no transaction open): the intent, or the error
    of a refused card (declined, 3-D Secure failed) for the caller to record."""
    card = gateway.setup_intent_card(setup_intent_id=setup_intent_id)
    if card is None:
        CardCheckout.objects.filter(pk=checkout.pk).update(attempt_started_at=None)
        raise PaymentMethodRequired()
    payment_method, customer = card
    limits.limits_reserve(checkout, payment_method=payment_method, address=client_address)
    try:
        return gateway.payment_intent_confirm(
            amount=checkout.amount,
            currency=checkout.currency,
            payment_method=payment_method,
            customer=customer,
            # The attempt's SetupIntent: a late event of an earlier attempt is told apart.
            metadata={_metadata_key(checkout): checkout.public_id, "setupIntent": setup_intent_id},
            idempotency_key=f"checkout:{checkout.public_id}:{setup_intent_id}",
            three_d_secure=limits.three_d_secure_required(checkout),
        )
    except (CardDeclined, CardAuthenticationFailed) as exc:
        return exc
    except ApplicationError:
        # Stripe did not answer: the attempt is over, and so is its place in the limits.
        CardCheckout.objects.filter(pk=checkout.pk).update(
            attempt_started_at=None, limit_counted_at=None
        )
        raise


def _follow(checkout: CardCheckout, intent: gateway.IntentResult) -> CheckoutResult:
    if intent.status == "succeeded":
        _complete(checkout, intent)
        return CheckoutResult(checkout=checkout, status="succeeded")
    if intent.status == "requires_action":
        return CheckoutResult(
            checkout=checkout, status="requires_action", client_secret=intent.client_secret
        )
    if intent.status in ("processing", "requires_capture", "requires_confirmation"):
        return CheckoutResult(checkout=checkout, status="processing")
    # requires_payment_method or canceled: this attempt failed (3-D Secure refused, decline).
    authentication = intent.error_code in ("", "payment_intent_authentication_failure")
    error = (
        CardAuthenticationFailed()
        if authentication
        else card_declined(intent.decline_code, intent.error_code)
    )
    _attempt_failed(checkout, code=error.code)
    return CheckoutResult(checkout=checkout, status="failed", error=error)


def _attempt_failed(checkout: CardCheckout, *, code: str) -> None:
    """The attempt is over; the checkout (and the cart) stay, ready for another card."""
    now = timezone.now()
    checkout.failure_code = code
    checkout.payment_intent_id = ""
    checkout.setup_intent_id = ""  # a used SetupIntent cannot take another card
    checkout.attempt_started_at = None
    checkout.limit_counted_at = None  # nothing charged: it no longer counts in the limits
    checkout.updated_at = now
    checkout.save(
        update_fields=[
            "failure_code",
            "payment_intent_id",
            "setup_intent_id",
            "attempt_started_at",
            "limit_counted_at",
            "attempts",
            "updated_at",
        ]
    )
    if checkout.payment_id:
        payment_card_failed(payment_id=checkout.payment_id, code=code)


def _complete(checkout: CardCheckout, intent: gateway.IntentResult) -> None:
    """The money is taken: capture the payment and queue its recharges, or credit the wallet.

    Runs under the checkout's row lock; ``completed_at`` makes a second call a no-op.
    """
    if checkout.completed_at is not None:
        return
    expected = (to_minor_units(checkout.amount), checkout.currency.lower())
    if (intent.amount, intent.currency) != expected:
        logger.error(
            "PaymentIntent %s is %s %s, expected %s %s for %s; not completing",
            intent.id,
            intent.amount,
            intent.currency,
            *expected,
            checkout.public_id,
        )
        raise PaymentNotPayable(_("The card payment does not match this order."))
    now = timezone.now()
    checkout.completed_at = now
    checkout.payment_intent_id = intent.id
    checkout.failure_code = ""
    checkout.updated_at = now
    fields = ["completed_at", "payment_intent_id", "failure_code", "updated_at"]
    if checkout.limit_counted_at is None:
        # Captured after its attempt was given up (a late success): it counts from now.
        checkout.limit_counted_at = now
        checkout.limit_amount_eur = limits.amount_in_eur(checkout.amount, checkout.currency)
        fields += ["limit_counted_at", "limit_amount_eur"]
    checkout.save(update_fields=fields)
    if checkout.payment_id:
        payment = payment_capture(
            payment_id=checkout.payment_id, payment_intent_id=intent.id, now=now
        )
        if checkout.guest_email:  # a guest's: the receipt goes to their email and link
            order_recharges_start(
                order=payment.order,
                payment=payment,
                receipt_to=Guest(email=checkout.guest_email, language=checkout.guest_language),
                receipt_path=guest_receipt_path(payment.public_id),
            )
        else:
            order_recharges_start(order=payment.order, payment=payment)
        if checkout.cart_id and checkout.cart_item_ids:  # exactly the lines it paid for
            cart_items_remove(cart_id=checkout.cart_id, item_ids=checkout.cart_item_ids)
        checkout.payment = payment
    else:
        assert checkout.topup_id is not None  # a checkout pays a payment or a top-up
        checkout.topup = topup_approve(
            topup_id=checkout.topup_id, note="card payment", payment_intent_id=intent.id
        )


# -- webhooks -------------------------------------------------------------------------------


def _checkout_for_intent(intent: gateway.IntentResult) -> CardCheckout | None:
    checkout = CardCheckout.objects.filter(payment_intent_id=intent.id).first()
    if checkout is not None:
        return checkout
    if payment_id := intent.metadata.get("paymentId"):
        return CardCheckout.objects.filter(payment__public_id=payment_id).first()
    if topup_id := intent.metadata.get("topupId"):
        return CardCheckout.objects.filter(topup__public_id=topup_id).first()
    return None


# -- the end of a checkout nobody pays --------------------------------------------------------

EXPIRED = "expired"  # its price hold ran out
CANCELED = "canceled"  # its buyer cancelled it
# What card_checkout_end did:
ENDED = "ended"  # the payment expired or was cancelled (a top-up failed): nothing charged
COMPLETED = "completed"  # the bank approved it first: paid after all
IN_FLIGHT = "in_flight"  # Stripe is processing a charge (or an attempt is being sent): left
SETTLED = "settled"  # it was already over: nothing to do
UNPAID = {str(Payment.Status.PENDING), str(Payment.Status.FAILED)}


def _end_state(checkout: CardCheckout, *, now) -> str:
    """Under the lock: can this checkout still be ended, or is it over (or busy)?"""
    if checkout.completed_at is not None:
        return COMPLETED
    if checkout.payment is not None:
        if checkout.payment.status not in UNPAID:
            return SETTLED
    elif checkout.topup is not None and checkout.topup.status != TopUp.Status.PENDING:
        return SETTLED
    if (
        not checkout.payment_intent_id
        and checkout.attempt_started_at
        and checkout.attempt_started_at > now - ATTEMPT_IN_FLIGHT
    ):
        return IN_FLIGHT  # a PaymentIntent is being created: its answer decides
    return ""


def _ended(checkout: CardCheckout, *, reason: str) -> None:
    """Under the lock: the checkout is over unpaid. Nothing was charged, so it gives its
    place in the card limits back (docs/fraud.md)."""
    now = timezone.now()
    CardCheckout.objects.filter(pk=checkout.pk).update(
        attempt_started_at=None,
        limit_counted_at=None,
        failure_code=reason,
        updated_at=now,
    )
    if checkout.payment_id:
        if reason == CANCELED:
            payment_cancel(payment_id=checkout.payment_id)
        else:
            payment_expire(payment_id=checkout.payment_id)
    else:
        note = (
            _("Cancelled before it was paid.")
            if reason == CANCELED
            else _("Not paid before its price hold ran out (3-D Secure not finished).")
        )
        topup_reject(topup_id=checkout.topup_id, by=None, note=str(note), failed=True)  # type: ignore[arg-type]


def card_checkout_end(*, checkout: CardCheckout, reason: str, now=None) -> str:
    """End a card checkout that will not be paid: ``EXPIRED`` (its price hold ran out) or
    ``CANCELED`` (its buyer cancelled it). A PaymentIntent still waiting for the bank (3-D
    Secure) is cancelled on Stripe first, with no lock held, so the bank can no longer approve
    it; one the bank approved meanwhile is completed instead, as the webhook would.

    Returns ``ENDED`` (the payment expired or was cancelled, a top-up failed; its place in the
    card limits is given back), ``COMPLETED`` (paid after all), ``IN_FLIGHT`` (Stripe is
    processing a charge: left to its answer) or ``SETTLED`` (already over)."""
    now = now or timezone.now()
    with transaction.atomic():
        locked = _lock(checkout.pk)
        state = _end_state(locked, now=now)
        if state:
            return state
        payment_intent_id = locked.payment_intent_id
        if not payment_intent_id:  # nothing at Stripe can take the money: end it now
            _ended(locked, reason=reason)
            return ENDED
    intent = gateway.payment_intent_cancel(payment_intent_id=payment_intent_id)
    with transaction.atomic():
        locked = _lock(checkout.pk)
        state = _end_state(locked, now=now)
        if state:
            return state
        if locked.payment_intent_id != payment_intent_id:
            return IN_FLIGHT  # another attempt since (not possible while one waits): leave it
        if intent.status == "succeeded":
            _complete(locked, intent)
            return COMPLETED
        if intent.status in ("canceled", "requires_payment_method"):
            _ended(locked, reason=reason)
            return ENDED
        return IN_FLIGHT


def card_payment_cancel(*, checkout: CardCheckout) -> CardCheckout:
    """Its buyer cancels a card payment not paid yet (the receipt page's "Cancel", ``POST
    /payments/cancel``): a PaymentIntent waiting for the bank is cancelled on Stripe, the
    payment is ``canceled`` and leaves the card limits. Cancelling one already expired or
    cancelled changes nothing; a paid one is 409 ``payment_not_cancellable``."""
    if checkout.payment_id is None:
        raise NotFound()
    outcome = card_checkout_end(checkout=checkout, reason=CANCELED)
    if outcome == COMPLETED:
        raise PaymentNotCancellable()
    if outcome == IN_FLIGHT:
        raise PaymentNotCancellable(
            _(
                "Your bank is answering this payment right now, so it cannot be cancelled. "
                "Look at it again in a minute."
            )
        )
    checkout.refresh_from_db()
    if checkout.payment is not None:
        checkout.payment.refresh_from_db()
    return checkout


def card_payments_expire(*, now=None, limit: int = 500) -> int:
    """Card payments not paid when their price hold is over become ``expired`` (a minute by
    beat): those no card attempt took to Stripe, and those left waiting for the bank (3-D
    Secure), whose PaymentIntent is cancelled on Stripe first (a card top-up left waiting
    fails). Either gives its place in the card limits back. One the bank approved meanwhile
    is completed instead; one Stripe is still processing is left to its answer. Returns how
    many ended."""
    now = now or timezone.now()
    due = (
        CardCheckout.objects.filter(completed_at__isnull=True, expires_at__lte=now)
        .filter(
            Q(payment__status=Payment.Status.PENDING)
            | (Q(topup__status=TopUp.Status.PENDING) & ~Q(payment_intent_id=""))
        )
        .order_by("expires_at")
        .values_list("pk", flat=True)[:limit]
    )
    expired = 0
    for checkout in CardCheckout.objects.filter(pk__in=list(due)):
        try:
            outcome = card_checkout_end(checkout=checkout, reason=EXPIRED, now=now)
        except ApplicationError:
            logger.warning("card checkout %s: Stripe unreachable; expired next time", checkout.pk)
            continue
        expired += outcome == ENDED
    return expired


def _is_current_attempt(checkout: CardCheckout, intent: gateway.IntentResult) -> bool:
    """Is ``intent`` the checkout's current attempt? Its recorded PaymentIntent, or (the id
    not recorded yet) one made from the SetupIntent the checkout holds now. A failure that
    arrives late for an earlier attempt must not undo the card the consumer just confirmed."""
    if checkout.payment_intent_id:
        return checkout.payment_intent_id == intent.id
    setup_intent = intent.metadata.get("setupIntent", "")
    return bool(setup_intent) and setup_intent == checkout.setup_intent_id


def stripe_event_handle(*, event: dict) -> bool:
    """Handle one verified webhook event once. Returns False for a replay (nothing done).

    A ``succeeded`` event is trusted only after asking Stripe (it is signed, but may be
    stale); that call is made before the transaction that records the event and locks the
    checkout, so no lock is held while Stripe answers.
    """
    obj = (event.get("data") or {}).get("object") or {}
    if event["type"] in disputes.EVENTS:
        return _dispute_event_handle(event=event, obj=disputes.stripe_object(event))
    relevant = event["type"] in ("payment_intent.succeeded", "payment_intent.payment_failed")
    intent = gateway.intent_result(obj) if relevant else None
    current = None
    missing = False
    if intent is not None and event["type"] == "payment_intent.succeeded":
        if StripeEvent.objects.filter(event_id=event["id"]).exists():
            return False  # a replay: do not even ask Stripe
        current = gateway.payment_intent_find(payment_intent_id=intent.id)
        # Stripe has no such PaymentIntent: nothing was charged by it. The event is recorded
        # and acknowledged (a 5xx would have Stripe retry it for days), and nothing changes.
        missing = current is None
    with transaction.atomic():
        try:
            with transaction.atomic():
                StripeEvent.objects.create(
                    event_id=event["id"],
                    type=event["type"],
                    payment_intent_id=obj.get("id", "")[:128]
                    if obj.get("object") == "payment_intent"
                    else "",
                )
        except IntegrityError:
            return False
        if intent is None:
            return True
        if missing:
            logger.warning(
                "webhook %s: Stripe does not know PaymentIntent %s; recorded, nothing done",
                event["id"],
                intent.id,
            )
            return True
        found = _checkout_for_intent(intent)
        if found is None:
            logger.info("webhook %s: no checkout for %s", event["id"], intent.id)
            return True
        checkout = _lock(found.pk)
        if current is not None:
            if current.status == "succeeded":
                try:
                    _complete(checkout, current)
                except PaymentNotPayable:
                    logger.exception("webhook %s: amount mismatch", event["id"])
        elif checkout.completed_at is None and _is_current_attempt(checkout, intent):
            _attempt_failed(checkout, code=intent.error_code or "card_declined")
    return True


def _dispute_event_handle(*, event: dict, obj: disputes.StripeObject) -> bool:
    """A dispute, early fraud warning or refund event (checkout.disputes): recorded once by
    its id, applied under its checkout's lock in the same transaction. No call to Stripe:
    the signed object names the PaymentIntent."""
    with transaction.atomic():
        try:
            with transaction.atomic():
                StripeEvent.objects.create(
                    event_id=event["id"],
                    type=event["type"],
                    payment_intent_id=obj.payment_intent_id,
                )
        except IntegrityError:
            return False
        found = disputes.checkout_for(obj)
        if found is None:
            logger.info("webhook %s: no checkout for %s; recorded", event["id"], obj.id)
            return True
        checkout = _lock(found.pk)
        if checkout.completed_at is None:
            logger.warning(
                "webhook %s: %s on %s, which was never paid; recorded",
                event["id"],
                event["type"],
                checkout.public_id,
            )
            return True
        disputes.stripe_dispute_apply(event_id=event["id"], obj=obj, checkout=checkout)
    return True
