"""Freezes of the card and the recipient numbers of a disputed payment, the back office's
review queue with its evidence, and a dispute's prefilled evidence sent to Stripe
(docs/fraud.md), with signed Stripe events against the real endpoint and a real localstripe."""

from __future__ import annotations

from datetime import timedelta

import pytest
import stripe
from django.utils import timezone

from backoffice.models import StaffAction
from checkout.models import CardDispute, CardKeyFreeze
from payments.models import Payment
from recharges.models import Recharge
from tests.card_support import VISA
from tests.fraud_support import (
    CREATED,
    MASTERCARD,
    MX_NUMBER,
    WARNED,
    card_payment,
    dispute,
    early_fraud_warning,
    event,
    intents_of,
    pay,
    post_event,
    prepare,
)
from tests.fraud_support import shopper as new_shopper
from tests.helpers import assert_ledger_balanced, assert_problem, second_factor_login

pytestmark = pytest.mark.django_db


@pytest.fixture
def shopper(user):
    client = new_shopper(user)
    return client


REVIEW = "/admin/checkout/cardkeyfreeze/"
OTHER_NUMBER = "+525512340000"


def warned(client, shopper, product, stripe_local) -> Payment:
    payment = card_payment(shopper, product, stripe_local, quantity=1)
    post_event(client, event(WARNED, early_fraud_warning(payment.payment_intent_id)))
    return payment


def test_a_warning_freezes_its_card_and_numbers_for_every_account(
    client, shopper, product, stripe_local
):
    payment = warned(client, shopper, product, stripe_local)
    keys = {(k.kind, k.status) for k in CardKeyFreeze.objects.all()}
    assert keys == {("card", "frozen"), ("number", "frozen")}
    assert CardKeyFreeze.objects.get(kind="number").value == MX_NUMBER
    # Another account: to the frozen number, refused at prepare (nothing written) ...
    other = new_shopper()
    body = assert_problem(prepare(other, product, MX_NUMBER), 403, "card_purchases_frozen")
    assert MX_NUMBER in body["detail"]
    assert Payment.objects.count() == 1
    # ... with the frozen card to another number, refused at checkout before any charge ...
    refused = pay(other, product, stripe_local, number=OTHER_NUMBER, card=VISA)
    assert_problem(refused, 403, "card_purchases_frozen")
    assert intents_of(stripe_local, refused.payment_id) == []
    assert Payment.objects.get(public_id=refused.payment_id).status == "pending"
    # ... and with another card to another number, paid.
    assert (
        pay(other, product, stripe_local, number=OTHER_NUMBER, card=MASTERCARD).status_code == 200
    )
    # A card top-up with the frozen card is refused too.
    prepared = other.post("/api/v1/wallet/topups/prepare", {"amount": "5.00"}, format="json")
    stripe_local.browser_confirm_setup(prepared.json()["setupClientSecret"], VISA)
    topup = other.post("/api/v1/wallet/topups/checkout", {"topupId": prepared.json()["topupId"]})
    assert_problem(topup, 403, "card_purchases_frozen")
    assert payment.public_id
    assert_ledger_balanced()


def test_the_review_queue_shows_the_evidence_and_staff_unfreeze_or_block(
    client, shopper, staff, product, stripe_local
):
    payment = warned(client, shopper, product, stripe_local)
    admin = second_factor_login(client.__class__(), staff)
    page = admin.get(REVIEW)
    assert page.status_code == 200
    html = page.content.decode()
    assert html.count('data-testid="frozen-account"') == 1
    assert html.count('data-testid="frozen-card"') == 1
    assert html.count('data-testid="frozen-number"') == 1
    assert payment.public_id in html and "127.0.0.1" in html and MX_NUMBER in html
    assert "issfr_1" in html and "made_with_stolen_card" in html

    card = CardKeyFreeze.objects.get(kind="card")
    number = CardKeyFreeze.objects.get(kind="number")
    done = admin.post(REVIEW, {"what": "card", "id": card.pk, "action": "unfreeze"})
    assert done.status_code == 302
    admin.post(REVIEW, {"what": "number", "id": number.pk, "action": "block"})
    admin.post(REVIEW, {"what": "account", "id": shopper.user.account_id, "action": "block"})
    card.refresh_from_db()
    number.refresh_from_db()
    assert (card.status, card.reviewed_by) == ("unfrozen", staff)
    assert number.status == "blocked"
    actions = set(StaffAction.objects.values_list("action", flat=True))
    assert {"card_freeze.unfreeze", "card_freeze.block", "account.block_cards"} <= actions
    html = admin.get(REVIEW).content.decode()
    assert 'data-testid="frozen-' not in html  # nothing left to review
    # Blocked: the account stays frozen; the number stays refused to every account.
    assert_problem(prepare(shopper, product, OTHER_NUMBER), 403, "card_purchases_frozen")
    assert_problem(prepare(new_shopper(), product, MX_NUMBER), 403, "card_purchases_frozen")
    # A new dispute leaves the blocked number blocked, and freezes the card again.
    post_event(
        client,
        event(CREATED, dispute(payment.payment_intent_id, status="needs_response", amount=500)),
    )
    number.refresh_from_db()
    card.refresh_from_db()
    assert (number.status, card.status) == ("blocked", "frozen")


@pytest.mark.parametrize(
    "data",
    [
        {"what": "card", "id": "x", "action": "unfreeze"},
        {"what": "card\x00", "id": "1", "action": "unfreeze"},
        {"what": "planet", "id": "1", "action": "unfreeze"},
        {"what": "card", "id": "999999", "action": "unfreeze"},
        {"what": "account", "id": "999999", "action": "block"},
        {"what": "dispute", "id": "1", "action": "block"},
        {"what": "card", "id": "1", "action": "evidence"},
        {},
    ],
)
def test_a_bad_review_post_is_a_4xx_and_changes_nothing(
    data, client, shopper, staff, product, stripe_local
):
    warned(client, shopper, product, stripe_local)
    admin = second_factor_login(client.__class__(), staff)
    response = admin.post(REVIEW, data)
    assert 400 <= response.status_code < 500
    assert set(CardKeyFreeze.objects.values_list("status", flat=True)) == {"frozen"}
    assert not StaffAction.objects.exists()


def test_a_non_staff_user_cannot_see_the_queue(client, user):
    client.force_login(user)
    assert client.get(REVIEW).status_code in (302, 403)


# -- a dispute's evidence, prefilled -------------------------------------------------------


@pytest.fixture
def stripe_disputes(monkeypatch):
    """What the gateway sends to ``stripe.Dispute.modify`` (localstripe has no disputes)."""
    sent: list[tuple[str, dict]] = []

    def update(self, dispute, params=None, options=None):
        if getattr(update, "fail", False):
            raise stripe.APIConnectionError("down")
        sent.append((dispute, params or {}))
        return {"id": dispute, "object": "dispute"}

    monkeypatch.setattr(stripe.DisputeService, "update", update)
    update.sent = sent  # type: ignore[attr-defined]
    return update


def test_a_disputes_evidence_is_prefilled_and_sent_by_staff(
    client, shopper, staff, product, stripe_local, stripe_disputes
):
    payment = card_payment(shopper, product, stripe_local, quantity=1)
    delivered_at = timezone.now() - timedelta(minutes=3)
    Recharge.objects.filter(payment=payment).update(
        status="dispatched", provider="reloadly-1", provider_transaction_id="RLY-778899"
    )
    post_event(
        client,
        event(CREATED, dispute(payment.payment_intent_id, status="needs_response", amount=500)),
    )
    Recharge.objects.filter(payment=payment).update(status="delivered", delivered_at=delivered_at)
    admin = second_factor_login(client.__class__(), staff)
    html = admin.get(REVIEW).content.decode()
    assert html.count('data-testid="evidence"') == 1
    assert "RLY-778899" in html and delivered_at.strftime("%Y-%m-%d %H:%M:%S") in html

    row = CardDispute.objects.get(stripe_id="dp_1")
    stripe_disputes.fail = True
    failed = admin.post(REVIEW, {"what": "dispute", "id": row.pk, "action": "evidence"})
    assert failed.status_code == 302
    row.refresh_from_db()
    assert row.evidence_submitted_at is None and not StaffAction.objects.exists()

    stripe_disputes.fail = False
    sent = admin.post(REVIEW, {"what": "dispute", "id": row.pk, "action": "evidence"})
    assert sent.status_code == 302
    [(dispute_id, params)] = stripe_disputes.sent
    evidence = params["evidence"]
    assert dispute_id == "dp_1" and params["submit"] is True
    assert evidence["shipping_tracking_number"] == "RLY-778899"
    assert evidence["shipping_carrier"] == "reloadly-1"
    assert evidence["service_date"] == delivered_at.strftime("%Y-%m-%d")
    assert evidence["customer_email_address"] == shopper.user.email
    assert evidence["customer_purchase_ip"] == "127.0.0.1"
    assert payment.public_id in evidence["uncategorized_text"]
    assert delivered_at.strftime("%Y-%m-%d %H:%M:%S") in evidence["uncategorized_text"]
    row.refresh_from_db()
    assert row.evidence_submitted_by == staff
    assert StaffAction.objects.filter(action="dispute.evidence").count() == 1
    assert 'data-testid="evidence"' not in admin.get(REVIEW).content.decode()


def test_unfreezing_the_account_unfreezes_its_cards_and_numbers_not_the_blocked_ones(
    client, shopper, product, stripe_local
):
    from django.core.management import call_command

    from checkout.disputes import card_key_review

    warned(client, shopper, product, stripe_local)
    number = CardKeyFreeze.objects.get(kind="number")
    card_key_review(freeze_id=number.pk, block=True)
    call_command("unfreeze_account", "--email", shopper.user.email)
    assert dict(CardKeyFreeze.objects.values_list("kind", "status")) == {
        "card": "unfrozen",
        "number": "blocked",
    }
    assert prepare(shopper, product, OTHER_NUMBER).status_code == 201
    assert_problem(prepare(shopper, product, MX_NUMBER), 403, "card_purchases_frozen")
