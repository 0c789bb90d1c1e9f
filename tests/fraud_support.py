"""What the card fraud tests share (docs/fraud.md): a shopper, a card payment paid through
localstripe as the browser pays it, the limits' refusals, racing threads, and Stripe events
built and signed here with the webhook secret."""

from __future__ import annotations

import itertools
import json
import threading
import time
from datetime import timedelta

import requests
import stripe
from django.db import connection
from django.utils import timezone
from rest_framework.test import APIClient

from accounts.models import Account
from payments.models import Payment
from tests.card_support import SECRET_KEY, VISA, WEBHOOK_SECRET
from tests.factories import UserFactory
from tests.helpers import assert_problem, bearer

PREPARE = "/api/v1/payments/prepare"


CHECKOUT = "/api/v1/payments/checkout"


NUMBER = "+525512345678"


MASTERCARD = "5555555555554444"


DAY = 24 * 3600


def shopper(user=None):
    user = user or UserFactory()
    client = APIClient()
    client.credentials(**bearer(user))
    client.user = user
    return client


def items(product, number=NUMBER, quantity=1):
    return {
        "items": [
            {"productId": product.public_id, "recipientNumber": number, "quantity": quantity}
        ],
        "baseCurrency": "EUR",
    }


def prepare(client, product, number=NUMBER, quantity=1):
    return client.post(PREPARE, items(product, number, quantity), format="json")


def pay(client, product, server, *, number=NUMBER, card=VISA, quantity=1):
    """prepare → the browser's confirmCardSetup → checkout; the checkout's response."""
    prepared = prepare(client, product, number, quantity)
    assert prepared.status_code == 201, prepared.content
    body = prepared.json()
    assert server.browser_confirm_setup(body["setupClientSecret"], card)["status"] == "succeeded"
    response = client.post(CHECKOUT, {"paymentId": body["paymentId"]}, format="json")
    response.payment_id = body["paymentId"]
    return response


def intents_of(server, payment_id: str) -> list[dict]:
    """Every PaymentIntent localstripe holds for our payment (the session's server is shared)."""
    found, after = [], None
    while True:
        params = {"limit": 100, **({"starting_after": after} if after else {})}
        page = requests.get(
            f"{server.url}/v1/payment_intents", params=params, auth=(SECRET_KEY, ""), timeout=5
        ).json()
        found += [pi for pi in page["data"] if pi["metadata"].get("paymentId") == payment_id]
        if not page.get("has_more") or not page["data"]:
            return found
        after = page["data"][-1]["id"]


def assert_refused(response, *, at_most: int = DAY) -> dict:
    body = assert_problem(response, 429, "card_limit_reached")
    assert 0 < int(response["Retry-After"]) <= at_most
    return body


def age(user, days: int) -> None:
    Account.objects.filter(pk=user.account_id).update(
        created_at=timezone.now() - timedelta(days=days)
    )
    user.account.refresh_from_db()


def race(calls) -> list:
    results: list = [None] * len(calls)
    barrier = threading.Barrier(len(calls))

    def worker(n):
        try:
            barrier.wait()
            results[n] = calls[n]()
        finally:
            connection.close()

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(len(calls))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    return results


def confirmed(client, product, server, number, card=VISA) -> str:
    body = prepare(client, product, number).json()
    assert server.browser_confirm_setup(body["setupClientSecret"], card)["status"] == "succeeded"
    return body["paymentId"]


def checkout_call(client, payment_id):
    return lambda: client.post(CHECKOUT, {"paymentId": payment_id}, format="json").status_code


# -- signed Stripe events (disputes, fraud warnings) --

WEBHOOK = "/webhooks/stripe"


MX_NUMBER = "+525512345678"


_ids = itertools.count(1)


def post_event(client, event: dict):
    payload = json.dumps(event)
    header = stripe.WebhookSignature.generate_signature_header(
        payload, WEBHOOK_SECRET, timestamp=int(time.time())
    )
    return client.post(
        WEBHOOK, payload.encode(), content_type="application/json", HTTP_STRIPE_SIGNATURE=header
    )


def event(kind: str, obj: dict) -> dict:
    return {
        "id": f"evt_dispute_{next(_ids)}",
        "object": "event",
        "type": kind,
        "data": {"object": obj},
    }


def dispute(pi: str, *, status: str, amount: int, dispute_id: str = "dp_1", fee: int | None = None):
    obj = {
        "id": dispute_id,
        "object": "dispute",
        "amount": amount,
        "currency": "eur",
        "charge": "ch_of_" + pi,
        "payment_intent": pi,
        "reason": "fraudulent",
        "status": status,
        "metadata": {},
    }
    if fee is not None:
        obj["balance_transactions"] = [{"id": "txn_dp", "amount": -amount, "fee": fee}]
    return obj


def early_fraud_warning(pi: str, warning_id: str = "issfr_1") -> dict:
    return {
        "id": warning_id,
        "object": "radar.early_fraud_warning",
        "actionable": True,
        "charge": "ch_of_" + pi,
        "payment_intent": pi,
        "fraud_type": "made_with_stolen_card",
    }


def card_payment(shopper, product, stripe_local, *, quantity=2) -> Payment:
    """A captured card payment whose recharges wait in the queue (no worker runs here)."""
    body = shopper.post(
        PREPARE,
        {
            "items": [
                {"productId": product.public_id, "recipientNumber": MX_NUMBER, "quantity": quantity}
            ],
            "baseCurrency": "EUR",
        },
        format="json",
    ).json()
    stripe_local.browser_confirm_setup(body["setupClientSecret"])
    assert (
        shopper.post(CHECKOUT, {"paymentId": body["paymentId"]}, format="json").status_code == 200
    )
    payment = Payment.objects.get(public_id=body["paymentId"])
    assert payment.status == "captured"
    assert set(payment.recharges.values_list("status", flat=True)) == {"queued"}
    return payment


CREATED = "charge.dispute.created"


CLOSED = "charge.dispute.closed"


WARNED = "radar.early_fraud_warning.created"
