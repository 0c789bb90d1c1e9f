"""The Stripe webhook under hostile but signed input (issue 33, "Also on the Stripe webhook"):
a missing object is not an outage, and no malformed signed event is ever a 5xx."""

import json
import time

import pytest
import stripe

from checkout.models import StripeEvent
from tests.card_support import WEBHOOK_SECRET

pytestmark = pytest.mark.django_db

WEBHOOK = "/webhooks/stripe"


def post_event(client, event: dict):
    """Signed with the webhook secret, as Stripe signs."""
    payload = json.dumps(event)
    header = stripe.WebhookSignature.generate_signature_header(
        payload, WEBHOOK_SECRET, timestamp=int(time.time())
    )
    return client.post(
        WEBHOOK, payload.encode(), content_type="application/json", HTTP_STRIPE_SIGNATURE=header
    )


def intent(pi_id: str = "pi_stripe_never_heard_of_it") -> dict:
    return {
        "id": pi_id,
        "object": "payment_intent",
        "status": "succeeded",
        "amount": 1000,
        "currency": "eur",
        "metadata": {"paymentId": "pay_unknown"},
    }


def test_succeeded_for_a_payment_intent_stripe_does_not_know_is_acknowledged_and_recorded(
    client, stripe_local
):
    """localstripe answers 404 to the retrieve, as Stripe does: not a 503 Stripe would retry
    for three days, but a 200 and the event recorded (a replay then does nothing)."""
    event = {
        "id": "evt_missing_pi",
        "object": "event",
        "type": "payment_intent.succeeded",
        "data": {"object": intent()},
    }
    response = post_event(client, event)
    assert response.status_code == 200, response.content
    assert response.json() == {"received": True, "replayed": False}
    recorded = StripeEvent.objects.get(event_id="evt_missing_pi")
    assert recorded.payment_intent_id == "pi_stripe_never_heard_of_it"
    assert post_event(client, event).json() == {"received": True, "replayed": True}


@pytest.mark.parametrize(
    "event",
    [
        {"id": "evt_\x00nul", "type": "payment_intent.succeeded", "data": {"object": intent()}},
        {"id": "evt_nul_type", "type": "payment_intent.\x00", "data": {"object": intent()}},
        {
            "id": "evt_nul_pi",
            "type": "payment_intent.payment_failed",
            "data": {"object": intent("pi_\x00")},
        },
        {
            "id": "evt_nul_meta",
            "type": "payment_intent.payment_failed",
            "data": {"object": {**intent(), "metadata": {"paymentId": "pay_\x00"}}},
        },
        {
            "id": "evt_" + "x" * 300,
            "type": "payment_intent.succeeded",
            "data": {"object": intent()},
        },
        {"id": "evt_nul_other", "type": "customer.created", "data": {"object": {"id": "cus_\x00"}}},
    ],
    ids=["nul-in-id", "nul-in-type", "nul-in-intent-id", "nul-in-metadata", "id-too-long", "other"],
)
def test_a_signed_event_holding_a_nul_or_an_overlong_id_is_a_4xx_never_a_5xx(
    client, stripe_local, event
):
    response = post_event(client, {"object": "event", **event})
    assert 400 <= response.status_code < 500, response.content
    assert response["Content-Type"].startswith("application/problem+json")
    assert StripeEvent.objects.count() == 0
