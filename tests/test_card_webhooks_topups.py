"""The signed Stripe webhook and card top-ups of the wallet, against a real localstripe."""

import json
import time
from decimal import Decimal

import pytest
import stripe
from rest_framework.test import APIClient

from checkout.models import StripeEvent
from payments.models import Payment
from recharges.models import Recharge
from tests.card_support import (
    DECLINED,
    THREE_D_SECURE,
    WEBHOOK_SECRET,
)
from tests.factories import ProductFactory, make_key
from tests.helpers import assert_ledger_balanced, assert_problem, bearer
from tests.waiting import wait_until
from wallet.models import LedgerEntry, TopUp, Wallet

pytestmark = pytest.mark.django_db

WEBHOOK = "/webhooks/stripe"
MX_NUMBER = "+525512345678"


@pytest.fixture
def shopper(user):
    product = ProductFactory(retail_price=Decimal("5.00"))
    client = APIClient()
    client.credentials(**bearer(user))
    client.user = user
    client.post(
        "/api/v1/cart/items",
        {"productId": product.public_id, "recipientNumber": MX_NUMBER, "quantity": 1},
        format="json",
    )
    return client


def signed(event: dict, secret: str = WEBHOOK_SECRET) -> tuple[bytes, str]:
    payload = json.dumps(event)
    header = stripe.WebhookSignature.generate_signature_header(
        payload, secret, timestamp=int(time.time())
    )
    return payload.encode(), header


def post_event(client, event: dict, secret: str = WEBHOOK_SECRET):
    payload, header = signed(event, secret)
    return client.post(
        WEBHOOK, payload, content_type="application/json", HTTP_STRIPE_SIGNATURE=header
    )


def event_for(intent: dict, kind: str = "payment_intent.succeeded", event_id="evt_1") -> dict:
    return {"id": event_id, "object": "event", "type": kind, "data": {"object": intent}}


def abandoned_payment(shopper, stripe_local) -> Payment:
    """3-D Secure completed at the bank, but the browser never called checkout again."""
    body = shopper.post("/api/v1/payments/prepare", {"sessionId": "default"}, format="json").json()
    stripe_local.browser_confirm_setup(body["setupClientSecret"], THREE_D_SECURE)
    action = shopper.post(
        "/api/v1/payments/checkout", {"paymentId": body["paymentId"]}, format="json"
    ).json()
    stripe_local.browser_authenticate(action["clientSecret"], success=True)
    payment = Payment.objects.get(public_id=body["paymentId"])
    assert payment.status == "pending"
    return payment


def test_webhook_succeeded_completes_a_payment_the_browser_abandoned(client, shopper, stripe_local):
    payment = abandoned_payment(shopper, stripe_local)
    intent = stripe_local.payment_intent(payment.payment_intent_id)
    response = post_event(client, event_for(intent))
    assert response.status_code == 200, response.content
    assert response.json() == {"received": True, "replayed": False}
    payment.refresh_from_db()
    assert payment.status == "captured"
    assert Recharge.objects.filter(payment=payment, status="queued").count() == 1
    assert not Recharge.objects.exclude(payment=payment).exists()

    # The browser comes back later: same payment, nothing new.
    late = shopper.post(
        "/api/v1/payments/checkout", {"paymentId": payment.public_id}, format="json"
    )
    assert late.status_code == 200 and late.json()["status"] == "captured"
    assert Recharge.objects.count() == 1


def test_a_replayed_event_does_nothing(client, shopper, stripe_local):
    payment = abandoned_payment(shopper, stripe_local)
    intent = stripe_local.payment_intent(payment.payment_intent_id)
    assert post_event(client, event_for(intent)).json()["replayed"] is False
    again = post_event(client, event_for(intent))
    assert again.status_code == 200 and again.json()["replayed"] is True
    assert StripeEvent.objects.count() == 1
    assert Recharge.objects.count() == 1


def test_a_bad_signature_is_400_and_changes_nothing(client, shopper, stripe_local):
    payment = abandoned_payment(shopper, stripe_local)
    intent = stripe_local.payment_intent(payment.payment_intent_id)
    response = post_event(client, event_for(intent), secret="whsec_someone_else")
    assert_problem(response, 400, "invalid_signature")
    unsigned = client.post(WEBHOOK, json.dumps(event_for(intent)), content_type="application/json")
    assert unsigned.status_code == 400
    payment.refresh_from_db()
    assert payment.status == "pending"
    assert StripeEvent.objects.count() == 0


def test_a_forged_succeeded_event_is_checked_with_stripe_first(client, shopper, stripe_local):
    """A valid signature on a stale or wrong object still needs Stripe to say succeeded."""
    body = shopper.post("/api/v1/payments/prepare", {"sessionId": "default"}, format="json").json()
    stripe_local.browser_confirm_setup(body["setupClientSecret"], THREE_D_SECURE)
    action = shopper.post(
        "/api/v1/payments/checkout", {"paymentId": body["paymentId"]}, format="json"
    ).json()
    pi_id = action["clientSecret"].split("_secret_")[0]
    intent = {**stripe_local.payment_intent(pi_id), "status": "succeeded"}
    assert post_event(client, event_for(intent)).status_code == 200
    assert Payment.objects.get(public_id=body["paymentId"]).status == "pending"


def test_payment_failed_event_marks_the_payment_failed_and_retryable(client, shopper, stripe_local):
    body = shopper.post("/api/v1/payments/prepare", {"sessionId": "default"}, format="json").json()
    stripe_local.browser_confirm_setup(body["setupClientSecret"], THREE_D_SECURE)
    action = shopper.post(
        "/api/v1/payments/checkout", {"paymentId": body["paymentId"]}, format="json"
    ).json()
    failed = stripe_local.browser_authenticate(action["clientSecret"], success=False)
    response = post_event(client, event_for(failed, "payment_intent.payment_failed", "evt_f"))
    assert response.status_code == 200
    payment = Payment.objects.get(public_id=body["paymentId"])
    assert payment.status == "failed" and payment.failure_code
    retry = shopper.post(
        "/api/v1/payments/prepare", {"paymentId": payment.public_id}, format="json"
    )
    assert retry.status_code == 201


def test_localstripe_delivers_a_signed_event_that_the_endpoint_accepts(
    live_server, shopper, stripe_local
):
    """End to end: localstripe signs and posts ``payment_intent.succeeded`` to our server."""
    stripe_local.register_webhook(f"{live_server.url}{WEBHOOK}")
    try:
        body = shopper.post(
            "/api/v1/payments/prepare", {"sessionId": "default"}, format="json"
        ).json()
        stripe_local.browser_confirm_setup(body["setupClientSecret"])
        shopper.post("/api/v1/payments/checkout", {"paymentId": body["paymentId"]}, format="json")
        wait_until(
            StripeEvent.objects.filter(type="payment_intent.succeeded").exists,
            timeout=10,
            what="Stripe's payment_intent.succeeded webhook",
        )
        assert Recharge.objects.count() == 1  # completed once, by checkout
    finally:
        stripe_local.unregister_webhook()


# -- card top-ups ---------------------------------------------------------------------------


def wallet_balance(user) -> Decimal:
    wallet = Wallet.objects.filter(account=user.account, kind="live").first()
    return wallet.balance if wallet else Decimal("0.00")


def test_card_topup_credits_the_wallet_once(user_api, stripe_local, client):
    prepared = user_api.post("/api/v1/wallet/topups/prepare", {"amount": "25.00"}, format="json")
    assert prepared.status_code == 201, prepared.content
    body = prepared.json()
    assert body["topupId"].startswith("top_") and body["amount"] == "25.00"
    stripe_local.browser_confirm_setup(body["setupClientSecret"])
    done = user_api.post("/api/v1/wallet/topups/checkout", {"topupId": body["topupId"]})
    assert done.status_code == 200, done.content
    assert done.json()["status"] == "approved" and done.json()["method"] == "card"
    again = user_api.post("/api/v1/wallet/topups/checkout", {"topupId": body["topupId"]})
    assert again.json() == done.json()

    topup = TopUp.objects.get(public_id=body["topupId"])
    intent = stripe_local.payment_intent(topup.external_reference)
    assert intent["metadata"]["topupId"] == topup.public_id
    assert intent["metadata"]["setupIntent"].startswith("seti_")
    assert post_event(client, event_for(intent, event_id="evt_topup")).status_code == 200
    assert wallet_balance(user_api.user) == Decimal("25.00")
    assert LedgerEntry.objects.filter(kind="topup", reference=topup.public_id).count() == 1
    assert_ledger_balanced()


def test_card_topup_declined_credits_nothing(user_api, stripe_local):
    body = user_api.post("/api/v1/wallet/topups/prepare", {"amount": "10.00"}, format="json").json()
    stripe_local.browser_confirm_setup(body["setupClientSecret"], DECLINED)
    response = user_api.post("/api/v1/wallet/topups/checkout", {"topupId": body["topupId"]})
    assert_problem(response, 402, "card_declined")
    assert TopUp.objects.get(public_id=body["topupId"]).status == "pending"
    assert wallet_balance(user_api.user) == Decimal("0.00")
    assert_ledger_balanced()


def test_card_topup_completed_by_webhook_when_the_browser_left(user_api, stripe_local, client):
    # 40.00: a first card purchase is at most CARD_LIMIT_FIRST_PURCHASE_AMOUNT (docs/fraud.md).
    body = user_api.post("/api/v1/wallet/topups/prepare", {"amount": "40.00"}, format="json").json()
    stripe_local.browser_confirm_setup(body["setupClientSecret"], THREE_D_SECURE)
    action = user_api.post("/api/v1/wallet/topups/checkout", {"topupId": body["topupId"]}).json()
    authenticated = stripe_local.browser_authenticate(action["clientSecret"], success=True)
    assert post_event(client, event_for(authenticated, event_id="evt_t1")).status_code == 200
    assert wallet_balance(user_api.user) == Decimal("40.00")
    assert_ledger_balanced()


def test_card_topups_refuse_api_keys(user, stripe_local):
    _key, plaintext = make_key(user, mode="live")
    client = APIClient()
    client.credentials(HTTP_X_API_KEY=plaintext)
    response = client.post("/api/v1/wallet/topups/prepare", {"amount": "10.00"}, format="json")
    assert_problem(response, 403, "web_session_required")


@pytest.mark.parametrize(
    "data",
    [
        "not an object",
        {"object": "a string"},
        {"object": {"id": 42, "object": "payment_intent"}},
        {"object": {"id": "pi_1", "object": "payment_intent", "metadata": ["a", "list"]}},
        {"object": {"id": "pi_1", "object": "payment_intent", "amount": "500"}},
    ],
)
def test_a_signed_but_malformed_event_is_400_and_records_nothing(client, stripe_local, data):
    event = {"id": "evt_bad", "object": "event", "type": "payment_intent.succeeded", "data": data}
    response = post_event(client, event)
    assert response.status_code == 400, response.content
    assert response["Content-Type"].startswith("application/problem+json")
    assert response.json()["code"] == "validation_error"
    assert StripeEvent.objects.count() == 0
