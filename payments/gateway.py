"""The one module that talks to Stripe (docs/contract.md §4).

Everything else calls these functions with our own types (Decimal amounts, our ids) and gets
plain results back; the ``stripe`` SDK does not leak out of here. The same calls run against
real Stripe and against ``localstripe`` (settings ``STRIPE_API_BASE``), so they stay within
what both support (../shared/notes/localstripe.md): SetupIntents for the card, a PaymentIntent
created *and confirmed* in one call, refunds without ``reason``.
"""

from __future__ import annotations

import json
import logging
import re
from dataclasses import dataclass, field
from decimal import Decimal
from functools import lru_cache
from typing import Any

import stripe
from django.conf import settings

from payments.errors import (
    CardAuthenticationFailed,
    CardPaymentsUnavailable,
    WebhookEventMalformed,
    WebhookSignatureInvalid,
    card_declined,
)
from reseller.money import to_minor_units

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class SetupResult:
    id: str
    client_secret: str


@dataclass(frozen=True)
class IntentResult:
    """What we need of a PaymentIntent."""

    id: str
    status: str  # succeeded | requires_action | processing | requires_payment_method | ...
    client_secret: str
    amount: int  # minor units
    currency: str  # lower case, as Stripe answers
    metadata: dict[str, str] = field(default_factory=dict)
    charge_id: str = ""
    error_code: str = ""
    decline_code: str = ""


def configured() -> bool:
    return bool(settings.STRIPE_SECRET_KEY)


def publishable_key() -> str:
    return settings.STRIPE_PUBLISHABLE_KEY


def test_mode() -> bool:
    """True when no real card can be charged: test keys or the local fake server."""
    return bool(settings.STRIPE_API_BASE) or settings.STRIPE_SECRET_KEY.startswith("sk_test_")


# Stripe's documented test cards that succeed, on Stripe's test mode and on localstripe alike
# (any 16-digit number outside its lists of special cards succeeds there). The test-mode banner
# lists several: one card pays at most CARD_LIMIT_PER_CARD_PER_DAY times in 24 hours.
TEST_CARDS = (
    "4242 4242 4242 4242",
    "5555 5555 5555 4444",
    "4000 0566 5566 5556",
    "2223 0031 2200 3222",
    "6011 1111 1111 1117",
)
TEST_CARD_3DS = "4000 0025 0000 3155"
TEST_CARD_DECLINED = "4000 0000 0000 0341"


@dataclass(frozen=True)
class CardTestMode:
    """What the test-mode banner tells (docs/payments.md): the cards to use, and the fraud
    limits a tester meets, which test mode keeps as production has them unless a demo raised
    them (``CARD_LIMITS_DEMO``, set by ``make run``; docs/fraud.md)."""

    cards: tuple[str, ...]
    three_d_secure: str
    declined: str
    per_card_per_day: int
    guest_per_day: int
    # An account younger than new_account_days pays by card at most new_account_per_day times
    # in 24 hours (checkout.limits): a tester on a fresh account meets it first.
    new_account_per_day: int
    new_account_days: int
    per_address_per_hour: int
    demo: bool


def card_test_mode() -> CardTestMode | None:
    """The test-mode banner's facts, or None when real cards are charged."""
    if not test_mode():
        return None
    return CardTestMode(
        cards=TEST_CARDS,
        three_d_secure=TEST_CARD_3DS,
        declined=TEST_CARD_DECLINED,
        per_card_per_day=settings.CARD_LIMIT_PER_CARD_PER_DAY,
        guest_per_day=settings.CARD_LIMIT_GUEST_PER_DAY,
        new_account_per_day=settings.CARD_LIMIT_NEW_ACCOUNT_PER_DAY,
        new_account_days=settings.CARD_LIMIT_NEW_ACCOUNT_DAYS,
        per_address_per_hour=settings.CARD_LIMIT_PER_ADDRESS_PER_HOUR,
        demo=settings.CARD_LIMITS_DEMO,
    )


@lru_cache(maxsize=4)
def _client_for(secret_key: str, api_base: str) -> stripe.StripeClient:
    base = {"api": api_base.rstrip("/")} if api_base else None
    return stripe.StripeClient(secret_key, base_addresses=base, max_network_retries=2)  # type: ignore[arg-type]


def client() -> stripe.StripeClient:
    if not configured():
        raise CardPaymentsUnavailable()
    return _client_for(settings.STRIPE_SECRET_KEY, settings.STRIPE_API_BASE)


def _get(obj: Any, name: str, default: Any = None) -> Any:
    if obj is None:
        return default
    if isinstance(obj, dict):
        return obj.get(name, default)
    return getattr(obj, name, default)


def _id_of(value: Any) -> str:
    """``latest_charge`` and friends come as an id (real Stripe) or expanded (localstripe)."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return _get(value, "id", "") or ""


def intent_result(pi: Any) -> IntentResult:
    error = _get(pi, "last_payment_error")
    metadata = _get(pi, "metadata") or {}
    if not isinstance(metadata, dict):
        metadata = metadata.to_dict() if hasattr(metadata, "to_dict") else dict(metadata)
    return IntentResult(
        id=_get(pi, "id"),
        status=_get(pi, "status"),
        client_secret=_get(pi, "client_secret", "") or "",
        amount=int(_get(pi, "amount", 0)),
        currency=(_get(pi, "currency", "") or "").lower(),
        metadata={str(k): str(v) for k, v in metadata.items()},
        charge_id=_id_of(_get(pi, "latest_charge")),
        error_code=(_get(error, "code", "") or "") if error else "",
        decline_code=str(_get(error, "decline_code", "") or "") if error else "",
    )


def _unavailable(exc: Exception) -> CardPaymentsUnavailable:
    logger.warning("stripe call failed: %s", exc)
    return CardPaymentsUnavailable()


def setup_intent_create(*, metadata: dict[str, str]) -> SetupResult:
    """A Customer and a SetupIntent the browser confirms with ``confirmCardSetup``.

    The Customer keeps the card usable for the PaymentIntent that follows (real Stripe
    refuses to reuse an unattached PaymentMethod).
    """
    try:
        customer = client().v1.customers.create(params={"metadata": metadata})
        seti = client().v1.setup_intents.create(
            params={  # type: ignore[arg-type]
                "customer": customer.id,
                "payment_method_types": ["card"],
                "usage": "on_session",
                "metadata": metadata,
            }
        )
    except stripe.StripeError as exc:
        raise _unavailable(exc) from exc
    return SetupResult(id=seti.id, client_secret=seti.client_secret)  # type: ignore[arg-type]


def setup_intent_card(*, setup_intent_id: str) -> tuple[str, str] | None:
    """The confirmed card of a SetupIntent as (payment method id, customer id), else None."""
    try:
        seti = client().v1.setup_intents.retrieve(setup_intent_id)
    except stripe.StripeError as exc:
        raise _unavailable(exc) from exc
    if _get(seti, "status") != "succeeded" or not _get(seti, "payment_method"):
        return None
    return _id_of(_get(seti, "payment_method")), _id_of(_get(seti, "customer"))


def card_fingerprint(*, payment_method: str) -> str:
    """The card's fingerprint (``card.fingerprint`` of the PaymentMethod): the same for every
    PaymentMethod of one card number, whichever customer or account saved it. Empty for a
    payment method that is not a card. localstripe computes one too (from the number)."""
    try:
        method = client().v1.payment_methods.retrieve(payment_method)
    except stripe.StripeError as exc:
        raise _unavailable(exc) from exc
    return str(_get(_get(method, "card"), "fingerprint", "") or "")


def payment_intent_confirm(
    *,
    amount: Decimal,
    currency: str,
    payment_method: str,
    customer: str,
    metadata: dict[str, str],
    idempotency_key: str,
    three_d_secure: bool = False,
) -> IntentResult:
    """Create and confirm a PaymentIntent in one call (localstripe cannot confirm later).

    A decline raises ``CardDeclined``; 3-D Secure comes back as ``requires_action``.
    ``three_d_secure``: ask the bank to authenticate the cardholder whenever the card supports
    it (``payment_method_options.card.request_three_d_secure = "any"``; docs/fraud.md).
    """
    params: dict[str, Any] = {
        "amount": to_minor_units(amount),
        "currency": currency.lower(),
        "payment_method_types": ["card"],
        "payment_method": payment_method,
        "confirm": True,
        "metadata": metadata,
    }
    if customer:
        params["customer"] = customer
    if three_d_secure:
        params["payment_method_options"] = {"card": {"request_three_d_secure": "any"}}
    try:
        pi = client().v1.payment_intents.create(
            params=params,  # type: ignore[arg-type]
            options={"idempotency_key": idempotency_key},
        )
    except stripe.CardError as exc:
        code = getattr(exc, "code", "") or "card_declined"
        if code == "payment_intent_authentication_failure":
            raise CardAuthenticationFailed() from exc
        decline_code = str(_get(getattr(exc, "error", None), "decline_code", "") or "")
        raise card_declined(decline_code, code) from exc
    except stripe.StripeError as exc:
        raise _unavailable(exc) from exc
    return intent_result(pi)


def dispute_evidence_submit(*, dispute_id: str, evidence: dict[str, str]) -> None:
    """Send a dispute's evidence to Stripe and submit it (``stripe.Dispute.modify``); never
    called under a row lock (docs/fraud.md)."""
    try:
        params: dict[str, Any] = {"evidence": evidence, "submit": True}
        client().v1.disputes.update(dispute_id, params=params)  # type: ignore[arg-type]
    except stripe.StripeError as exc:
        raise _unavailable(exc) from exc


def payment_intent_get(*, payment_intent_id: str) -> IntentResult:
    try:
        return intent_result(client().v1.payment_intents.retrieve(payment_intent_id))
    except stripe.StripeError as exc:
        raise _unavailable(exc) from exc


def payment_intent_find(*, payment_intent_id: str) -> IntentResult | None:
    """The PaymentIntent, or None when Stripe answers that it has none by that id (404): a
    missing object is an answer, not an outage. Other failures are ``CardPaymentsUnavailable``."""
    try:
        return intent_result(client().v1.payment_intents.retrieve(payment_intent_id))
    except stripe.InvalidRequestError as exc:
        if exc.http_status == 404:
            logger.warning("stripe has no PaymentIntent %s", payment_intent_id)
            return None
        raise _unavailable(exc) from exc
    except stripe.StripeError as exc:
        raise _unavailable(exc) from exc


def payment_intent_cancel(*, payment_intent_id: str) -> IntentResult:
    """Cancel a PaymentIntent not paid yet (waiting for 3-D Secure, or for a card): the bank
    can no longer approve it. Stripe refuses to cancel one that succeeded or is processing
    (``payment_intent_unexpected_state``; localstripe: 400): it comes back as it is now, for
    the caller to apply. (No ``cancellation_reason``: localstripe refuses any parameter.)"""
    try:
        return intent_result(client().v1.payment_intents.cancel(payment_intent_id))
    except stripe.InvalidRequestError as exc:
        current = payment_intent_find(payment_intent_id=payment_intent_id)
        if current is None:
            raise _unavailable(exc) from exc
        return current
    except stripe.StripeError as exc:
        raise _unavailable(exc) from exc


def card_refund(*, payment, amount: Decimal, reference: str) -> str:
    """Refund ``amount`` of a captured card payment to the card, once per ``reference``.

    Stripe's idempotency key makes a second call with the same reference return the first
    refund instead of refunding twice. Returns the refund id.
    """
    if not payment.payment_intent_id:
        raise CardPaymentsUnavailable("This card payment has no PaymentIntent to refund.")
    try:
        refund = client().v1.refunds.create(
            params={
                "payment_intent": payment.payment_intent_id,
                "amount": to_minor_units(amount),
                "metadata": {"paymentId": payment.public_id, "reference": reference},
            },
            options={"idempotency_key": f"refund:{payment.public_id}:{reference}"},
        )
    except stripe.StripeError as exc:
        raise _unavailable(exc) from exc
    return refund.id


def webhook_event(*, payload: bytes, signature: str | None) -> dict[str, Any]:
    """Verify a webhook's ``Stripe-Signature`` and return the event as a plain dict."""
    secret = settings.STRIPE_WEBHOOK_SECRET
    if not secret or not signature:
        raise WebhookSignatureInvalid()
    try:
        stripe.WebhookSignature.verify_header(
            payload.decode("utf-8"), signature, secret, stripe.Webhook.DEFAULT_TOLERANCE
        )
    except (stripe.SignatureVerificationError, UnicodeDecodeError) as exc:
        raise WebhookSignatureInvalid() from exc
    try:
        event = json.loads(payload)
    except ValueError as exc:
        raise WebhookSignatureInvalid() from exc
    if not isinstance(event, dict) or not event.get("id") or not event.get("type"):
        raise WebhookSignatureInvalid()
    _check_event_shape(event)
    _check_event_text(event)
    return event


# The fields of an event (and of its PaymentIntent) that we read, with the types we expect.
_EVENT_FIELDS = {"id": str, "type": str, "data": dict}
_OBJECT_FIELDS = {
    "id": str,
    "object": str,
    "status": str,
    "amount": int,
    "currency": str,
    "client_secret": str,
    "metadata": dict,
    "last_payment_error": dict,
}


# What the ids we store and look up may hold: printable ASCII (Stripe's ids are), at most the
# columns' lengths (``StripeEvent.event_id`` 255, ``type`` 100).
_EVENT_ID = re.compile(r"^[\x21-\x7e]{1,255}$")
_EVENT_TYPE = re.compile(r"^[\x21-\x7e]{1,100}$")


def _has_nul(value: Any) -> bool:
    if isinstance(value, str):
        return "\x00" in value
    if isinstance(value, dict):
        return any(_has_nul(k) or _has_nul(v) for k, v in value.items())
    if isinstance(value, list):
        return any(_has_nul(item) for item in value)
    return False


def _check_event_text(event: dict[str, Any]) -> None:
    """A signed event's text must fit what we store and query: PostgreSQL refuses a NUL in
    any text (that was a 500), and an id longer than its column too."""
    wrong = []
    if not _EVENT_ID.match(event["id"]):
        wrong.append("id")
    if not _EVENT_TYPE.match(event["type"]):
        wrong.append("type")
    if _has_nul(event.get("data")):
        wrong.append("data")
    if wrong:
        raise WebhookEventMalformed(
            fields=[
                {"field": name, "code": "invalid", "message": "Unexpected characters or length."}
                for name in wrong
            ]
        )


def _check_event_shape(event: dict[str, Any]) -> None:
    """A signed event is trusted to be Stripe's, not to be well formed: check what we read."""
    obj = event.get("data", {}).get("object") if isinstance(event.get("data"), dict) else None
    wrong = [name for name, kind in _EVENT_FIELDS.items() if not isinstance(event.get(name), kind)]
    if not isinstance(obj, dict):
        wrong.append("data.object")
    else:
        wrong += [
            f"data.object.{name}"
            for name, kind in _OBJECT_FIELDS.items()
            if obj.get(name) is not None
            and (not isinstance(obj[name], kind) or isinstance(obj[name], bool))
        ]
    if wrong:
        raise WebhookEventMalformed(
            fields=[
                {"field": name, "code": "invalid", "message": "Unexpected type."} for name in wrong
            ]
        )
