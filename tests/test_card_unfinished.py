"""A card payment nobody finishes (issue 43, item 1): one left waiting for the bank's 3-D Secure
ends at its ``expiresAt`` like any other (checkout, or the sweeper if nobody comes back), its
PaymentIntent cancelled on Stripe so the bank can no longer approve it; it counts in the card
limits only while it can still be charged (decisions section 16); its buyer can cancel it; its
page says what it is ("Waiting for your bank", "Payment expired" …, not a "Receipt" "Paid by
Card") with "Finish payment" and "Cancel payment" while it can be paid. Against a real
localstripe (docs/payments.md, docs/fraud.md); in a browser:
tests/browser/test_card_unfinished.py."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal

import pytest
from django.test import Client
from django.utils import timezone
from rest_framework.test import APIClient

from checkout.models import CardCheckout
from checkout.services import card_payments_expire
from payments.models import Payment
from recharges.models import Recharge
from tests.card_support import DECLINED, THREE_D_SECURE, VISA
from tests.factories import PASSWORD, ProductFactory, UserFactory, make_key
from tests.fraud_support import CHECKOUT, NUMBER, age, assert_refused, prepare, shopper
from tests.helpers import assert_ledger_balanced, assert_problem, bearer
from wallet.models import TopUp

pytestmark = pytest.mark.django_db

CANCEL = "/api/v1/payments/cancel"


@pytest.fixture
def product():
    return ProductFactory(retail_price=Decimal("5.00"), name="Telcel 100 MXN")


@pytest.fixture
def buyer():
    client = shopper()
    age(client.user, 30)  # not a new account: only the per-number limit bites here
    return client


def waiting_for_the_bank(client, product, server, *, quantity=3, number=NUMBER) -> str:
    """A payment of ``quantity`` recharges with the 3-D Secure card, its authentication
    never finished: checkout answered 202 ``requires_action`` and nobody came back."""
    body = prepare(client, product, number, quantity).json()
    assert server.browser_confirm_setup(body["setupClientSecret"], THREE_D_SECURE)["status"] == (
        "succeeded"
    )
    action = client.post(CHECKOUT, {"paymentId": body["paymentId"]}, format="json")
    assert action.status_code == 202 and action.json()["status"] == "requires_action"
    return body["paymentId"]


def hold_over(payment_id: str) -> None:
    """Its 15-minute price hold ran out (aged, rather than waiting 15 minutes)."""
    CardCheckout.objects.filter(payment__public_id=payment_id).update(
        expires_at=timezone.now() - timedelta(seconds=1)
    )
    Payment.objects.filter(public_id=payment_id).update(
        expires_at=timezone.now() - timedelta(seconds=1)
    )


def test_a_payment_left_waiting_for_the_bank_expires_by_the_sweeper_and_stripe_cancels_it(
    buyer, product, stripe_local
):
    payment_id = waiting_for_the_bank(buyer, product, stripe_local)
    assert card_payments_expire() == 0  # its hold still runs
    payment = Payment.objects.get(public_id=payment_id)
    assert payment.status == "pending" and payment.waiting_for_bank
    intent_id = payment.payment_intent_id

    hold_over(payment_id)
    assert card_payments_expire() == 1
    assert card_payments_expire() == 0  # once
    payment.refresh_from_db()
    assert payment.status == "expired"
    assert stripe_local.payment_intent(intent_id)["status"] == "canceled"
    checkout = CardCheckout.objects.get(payment=payment)
    assert checkout.limit_counted_at is None and checkout.completed_at is None
    # The bank can no longer approve it, and checkout says it is over; nothing was charged.
    intent = stripe_local.payment_intent(intent_id)
    stripe_local.browser_authenticate(intent["client_secret"], success=True)
    assert stripe_local.payment_intent(intent_id)["status"] == "canceled"
    assert_problem(
        buyer.post(CHECKOUT, {"paymentId": payment_id}, format="json"), 409, "payment_not_payable"
    )
    assert Recharge.objects.count() == 0
    assert_ledger_balanced()


def test_checkout_after_the_hold_ends_a_payment_left_waiting_for_the_bank(
    buyer, product, stripe_local
):
    """No sweeper ran yet: the browser that comes back late finds it expired, as any other."""
    payment_id = waiting_for_the_bank(buyer, product, stripe_local)
    hold_over(payment_id)
    response = buyer.post(CHECKOUT, {"paymentId": payment_id}, format="json")
    assert_problem(response, 409, "quote_expired")
    payment = Payment.objects.get(public_id=payment_id)
    assert payment.status == "expired"
    assert stripe_local.payment_intent(payment.payment_intent_id)["status"] == "canceled"
    assert card_payments_expire() == 0


def test_a_payment_the_bank_approved_before_the_hold_ended_is_completed_not_expired(
    buyer, product, stripe_local
):
    """Authenticated in time, but the browser and the webhook never came back: the sweeper
    finds the money taken and completes the payment instead of expiring it."""
    payment_id = waiting_for_the_bank(buyer, product, stripe_local)
    payment = Payment.objects.get(public_id=payment_id)
    intent = stripe_local.payment_intent(payment.payment_intent_id)
    stripe_local.browser_authenticate(intent["client_secret"], success=True)
    hold_over(payment_id)
    assert card_payments_expire() == 0
    payment.refresh_from_db()
    assert payment.status == "captured"
    assert Recharge.objects.filter(payment=payment).count() == 3
    assert_ledger_balanced()


def test_a_payment_waiting_for_the_bank_counts_until_it_ends_then_gives_its_place_back(
    buyer, product, stripe_local
):
    """The issue's retry: 3 recharges to a number left waiting, 3 more are over the 5 a day
    while the first can still be charged; the refusal says so and how to end it. Once it is
    over (here: expired), the same retry goes through."""
    waiting_id = waiting_for_the_bank(buyer, product, stripe_local, quantity=3)
    refused = assert_refused(prepare(buyer, product, NUMBER, 3), at_most=15 * 60)
    assert "waiting for your bank" in refused["detail"]
    assert "cancel" in refused["detail"]
    hold_over(waiting_id)
    assert card_payments_expire() == 1
    again = prepare(buyer, product, NUMBER, 3)
    assert again.status_code == 201, again.content
    stripe_local.browser_confirm_setup(again.json()["setupClientSecret"], VISA)
    paid = buyer.post(CHECKOUT, {"paymentId": again.json()["paymentId"]}, format="json")
    assert paid.status_code == 200, paid.content
    assert_ledger_balanced()


def test_someone_elses_payment_waiting_for_the_bank_is_not_named_in_the_refusal(
    buyer, product, stripe_local
):
    waiting_for_the_bank(buyer, product, stripe_local, quantity=3)
    other = shopper()
    age(other.user, 30)
    refused = assert_refused(prepare(other, product, NUMBER, 3), at_most=15 * 60)
    assert "waiting for your bank" not in refused["detail"]


def test_the_buyer_cancels_a_payment_waiting_for_the_bank(buyer, product, stripe_local):
    payment_id = waiting_for_the_bank(buyer, product, stripe_local)
    response = buyer.post(CANCEL, {"paymentId": payment_id}, format="json")
    assert response.status_code == 200, response.content
    assert response.json()["id"] == payment_id and response.json()["status"] == "canceled"
    payment = Payment.objects.get(public_id=payment_id)
    assert payment.status == "canceled"
    assert stripe_local.payment_intent(payment.payment_intent_id)["status"] == "canceled"
    assert CardCheckout.objects.get(payment=payment).limit_counted_at is None
    # Again: nothing more happens. It cannot be paid any more, nor does it expire later.
    again = buyer.post(CANCEL, {"paymentId": payment_id}, format="json")
    assert again.status_code == 200 and again.json()["status"] == "canceled"
    assert_problem(
        buyer.post(CHECKOUT, {"paymentId": payment_id}, format="json"), 409, "payment_not_payable"
    )
    hold_over(payment_id)
    assert card_payments_expire() == 0
    # Its place is free: the same three recharges go through at once.
    fresh = prepare(buyer, product, NUMBER, 3)
    assert fresh.status_code == 201, fresh.content
    assert Recharge.objects.count() == 0
    assert_ledger_balanced()


def test_a_prepared_or_declined_payment_can_be_cancelled_too(buyer, product, stripe_local):
    never_confirmed = prepare(buyer, product).json()["paymentId"]
    declined = prepare(buyer, product).json()
    stripe_local.browser_confirm_setup(declined["setupClientSecret"], DECLINED)
    assert_problem(
        buyer.post(CHECKOUT, {"paymentId": declined["paymentId"]}, format="json"),
        402,
        "card_declined",
    )
    for payment_id in (never_confirmed, declined["paymentId"]):
        response = buyer.post(CANCEL, {"paymentId": payment_id}, format="json")
        assert response.status_code == 200, response.content
        assert Payment.objects.get(public_id=payment_id).status == "canceled"


def test_a_paid_payment_cannot_be_cancelled(buyer, product, stripe_local):
    body = prepare(buyer, product).json()
    stripe_local.browser_confirm_setup(body["setupClientSecret"], VISA)
    assert buyer.post(CHECKOUT, {"paymentId": body["paymentId"]}, format="json").status_code == 200
    response = buyer.post(CANCEL, {"paymentId": body["paymentId"]}, format="json")
    assert_problem(response, 409, "payment_not_cancellable")
    assert Payment.objects.get(public_id=body["paymentId"]).status == "captured"
    assert_ledger_balanced()


def test_cancel_refuses_bad_input_another_accounts_payment_and_api_keys(
    buyer, product, stripe_local
):
    payment_id = waiting_for_the_bank(buyer, product, stripe_local)
    assert_problem(buyer.post(CANCEL, {}, format="json"), 400, "validation_error")
    assert_problem(
        buyer.post(CANCEL, {"paymentId": "pay_nope", "x": 1}, format="json"),
        400,
        "validation_error",
    )
    stranger = APIClient()
    stranger.credentials(**bearer(UserFactory()))
    answer = stranger.post(CANCEL, {"paymentId": payment_id}, format="json")
    assert_problem(answer, 404, "not_found")
    _key, plaintext = make_key(buyer.user, mode="live")
    keyed = APIClient()
    keyed.credentials(HTTP_X_API_KEY=plaintext)
    assert_problem(
        keyed.post(CANCEL, {"paymentId": payment_id}, format="json"), 403, "web_session_required"
    )
    assert Payment.objects.get(public_id=payment_id).waiting_for_bank  # nothing changed


def test_a_new_attempt_after_a_decline_shows_pending_while_the_bank_answers(
    buyer, product, stripe_local
):
    body = prepare(buyer, product).json()
    stripe_local.browser_confirm_setup(body["setupClientSecret"], DECLINED)
    buyer.post(CHECKOUT, {"paymentId": body["paymentId"]}, format="json")
    assert Payment.objects.get(public_id=body["paymentId"]).status == "failed"
    retry = buyer.post("/api/v1/payments/prepare", {"paymentId": body["paymentId"]}, format="json")
    stripe_local.browser_confirm_setup(retry.json()["setupClientSecret"], THREE_D_SECURE)
    action = buyer.post(CHECKOUT, {"paymentId": body["paymentId"]}, format="json")
    assert action.status_code == 202
    payment = Payment.objects.get(public_id=body["paymentId"])
    assert payment.status == "pending" and payment.waiting_for_bank
    assert payment.status_label == "Waiting for your bank"


def test_a_card_topup_left_waiting_for_the_bank_fails_at_its_hold(buyer, stripe_local):
    body = buyer.post("/api/v1/wallet/topups/prepare", {"amount": "20.00"}, format="json").json()
    stripe_local.browser_confirm_setup(body["setupClientSecret"], THREE_D_SECURE)
    action = buyer.post("/api/v1/wallet/topups/checkout", {"topupId": body["topupId"]})
    assert action.status_code == 202, action.content
    checkout = CardCheckout.objects.get(topup__public_id=body["topupId"])
    assert checkout.limit_counted_at is not None
    CardCheckout.objects.filter(pk=checkout.pk).update(
        expires_at=timezone.now() - timedelta(seconds=1)
    )
    assert card_payments_expire() == 1
    checkout.refresh_from_db()
    assert checkout.limit_counted_at is None
    assert checkout.topup.status == TopUp.Status.FAILED
    assert stripe_local.payment_intent(checkout.payment_intent_id)["status"] == "canceled"
    assert_ledger_balanced()


def test_a_guest_cancels_a_payment_waiting_for_the_bank_from_this_browser_only(
    client, product, stripe_local
):
    client.post(
        "/cart/add/",
        {"product": product.public_id, "recipient_number": NUMBER, "quantity": "1"}
        | {"then": "checkout"},
    )
    prepared = client.post(
        "/api/v1/guest/payments/prepare",
        {"email": "guest@example.com"},
        content_type="application/json",
    ).json()
    stripe_local.browser_confirm_setup(prepared["setupClientSecret"], THREE_D_SECURE)
    action = client.post(
        "/api/v1/guest/payments/checkout",
        {"paymentId": prepared["paymentId"]},
        content_type="application/json",
    )
    assert action.status_code == 202
    body = {"paymentId": prepared["paymentId"]}
    other = Client()
    assert_problem(
        other.post("/api/v1/guest/payments/cancel", body, content_type="application/json"),
        404,
        "not_found",
    )
    response = client.post("/api/v1/guest/payments/cancel", body, content_type="application/json")
    assert response.status_code == 200, response.content
    assert response.json() == {
        "status": "canceled",
        "paymentId": prepared["paymentId"],
        "receiptUrl": prepared["receiptUrl"],
    }
    assert Payment.objects.get(public_id=prepared["paymentId"]).status == "canceled"


# -- its page: what it is, "Finish payment" and "Cancel payment" ----------------------------


def site_of(buyer, language="en") -> Client:
    site = Client(headers={"Accept-Language": language})
    assert site.login(username=buyer.user.email, password=PASSWORD)
    return site


def page(site, payment_id) -> str:
    response = site.get(f"/payments/{payment_id}/")
    assert response.status_code == 200
    return response.content.decode()


def test_a_payment_waiting_for_the_bank_says_so_and_offers_finish_and_cancel(
    buyer, product, stripe_local
):
    payment_id = waiting_for_the_bank(buyer, product, stripe_local)
    text = page(site_of(buyer), payment_id)
    assert "<title>Waiting for your bank" in text
    assert '<h1 data-testid="payment-heading">Waiting for your bank' in text
    assert ">Receipt<" not in text and "Paid by" not in text
    assert "Nothing has been charged" in text
    assert 'data-testid="finish-payment"' in text and ">Finish payment</button>" in text
    assert ">Cancel payment</button>" in text
    assert 'data-waiting="true"' in text and 'id="card-element"' not in text  # no card asked
    assert "+52 55 1234 5678" in text and "Telcel 100 MXN" in text  # what it would buy
    assert "/js/checkout.js" in text
    history = site_of(buyer).get("/payments/").content.decode()
    assert "Waiting for your bank" in history and "Pending" not in history


def test_the_payment_page_reads_in_spanish(buyer, product, stripe_local):
    payment_id = waiting_for_the_bank(buyer, product, stripe_local)
    text = page(site_of(buyer, "es"), payment_id)
    assert "Esperando a tu banco" in text
    assert "Terminar el pago" in text and "Cancelar el pago" in text
    assert "No se ha cobrado nada" in text


def test_an_expired_or_cancelled_payment_says_so_without_buttons(buyer, product, stripe_local):
    payment_id = waiting_for_the_bank(buyer, product, stripe_local)
    CardCheckout.objects.update(expires_at=timezone.now() - timedelta(seconds=1))
    Payment.objects.update(expires_at=timezone.now() - timedelta(seconds=1))
    site = site_of(buyer)
    text = page(site, payment_id)  # its hold is over: expired at once, before the sweeper
    assert '<h1 data-testid="payment-heading">Payment expired' in text
    assert "Finish payment" not in text and "Cancel payment" not in text
    assert 'data-final="true"' not in text  # the page follows it until the sweeper ends it
    status = site.get(f"/payments/{payment_id}/status.json").json()
    assert status["statusLabel"] == "Expired" and status["statusShown"] == "expired"

    other = prepare(buyer, product, "+525512345670", 1).json()["paymentId"]
    assert buyer.post("/api/v1/payments/cancel", {"paymentId": other}).status_code == 200
    text = page(site, other)
    assert "Payment cancelled" in text and "nothing was charged" in text
    assert "Finish payment" not in text and 'data-final="true"' in text


def test_a_declined_payment_offers_the_card_form_for_another_card(buyer, product, stripe_local):
    body = prepare(buyer, product).json()
    stripe_local.browser_confirm_setup(body["setupClientSecret"], DECLINED)
    buyer.post(CHECKOUT, {"paymentId": body["paymentId"]}, format="json")
    text = page(site_of(buyer), body["paymentId"])
    assert "Payment failed" in text and "The card was declined." in text
    assert 'id="card-element"' in text and 'data-waiting="false"' in text
    assert f'data-payment-id="{body["paymentId"]}"' in text


def test_a_paid_payment_is_still_a_receipt(buyer, product, stripe_local):
    body = prepare(buyer, product).json()
    stripe_local.browser_confirm_setup(body["setupClientSecret"])
    assert buyer.post(CHECKOUT, {"paymentId": body["paymentId"]}, format="json").status_code == 200
    text = page(site_of(buyer), body["paymentId"])
    assert "<title>Receipt" in text and "Paid by" in text and "Finish payment" not in text


def test_a_guests_page_offers_finish_and_cancel_only_in_the_browser_that_prepared_it(
    client, product, stripe_local
):
    client.post(
        "/cart/add/",
        {"product": product.public_id, "recipient_number": NUMBER, "quantity": "1"}
        | {"then": "checkout"},
    )
    prepared = client.post(
        "/api/v1/guest/payments/prepare", {"email": "g@example.com"}, "application/json"
    ).json()
    stripe_local.browser_confirm_setup(prepared["setupClientSecret"], THREE_D_SECURE)
    client.post(
        "/api/v1/guest/payments/checkout", {"paymentId": prepared["paymentId"]}, "application/json"
    )
    mine = client.get(prepared["receiptUrl"]).content.decode()
    assert "Waiting for your bank" in mine and "Finish payment" in mine
    assert "/api/v1/guest/payments/cancel" in mine
    elsewhere = Client().get(prepared["receiptUrl"]).content.decode()
    assert "Waiting for your bank" in elsewhere and "Finish payment" not in elsewhere


def test_a_guests_declined_payment_offers_no_card_form_and_expires_with_its_hold(
    client, product, stripe_local
):
    """A guest's card form needs the guest checkout page's email: "Buy now" starts anew."""
    client.post(
        "/cart/add/",
        {"product": product.public_id, "recipient_number": NUMBER, "quantity": "1"}
        | {"then": "checkout"},
    )
    prepared = client.post(
        "/api/v1/guest/payments/prepare", {"email": "g@example.com"}, "application/json"
    ).json()
    stripe_local.browser_confirm_setup(prepared["setupClientSecret"], DECLINED)
    client.post(
        "/api/v1/guest/payments/checkout", {"paymentId": prepared["paymentId"]}, "application/json"
    )
    text = client.get(prepared["receiptUrl"]).content.decode()
    assert "Payment failed" in text and "The card was declined." in text
    assert "Finish payment" not in text and 'id="card-form"' not in text
