"""3-D Secure asked for above ``CARD_3DS_ABOVE_EUR`` (docs/fraud.md): the PaymentIntent is
created with ``payment_method_options.card.request_three_d_secure = "any"``, against a real
localstripe (which accepts the option; its 3-D Secure cards still ask the browser)."""

from __future__ import annotations

from decimal import Decimal

import pytest
import stripe

from tests.card_support import THREE_D_SECURE
from tests.factories import ProductFactory
from tests.fraud_support import CHECKOUT, age, pay, prepare, shopper
from tests.helpers import assert_ledger_balanced

ASKED = {"card": {"request_three_d_secure": "any"}}


@pytest.fixture
def created(monkeypatch):
    """The params of every PaymentIntent created (and still sent to localstripe)."""
    seen: list[dict] = []
    real = stripe.PaymentIntentService.create

    def spy(self, params=None, options=None):
        seen.append(dict(params or {}))
        return real(self, params, options)

    monkeypatch.setattr(stripe.PaymentIntentService, "create", spy)
    return seen


@pytest.mark.django_db
def test_a_payment_above_the_amount_asks_for_3d_secure(created, stripe_local):
    client = shopper()
    age(client.user, 30)
    small = ProductFactory(retail_price=Decimal("30.00"))
    big = ProductFactory(retail_price=Decimal("35.00"))
    assert pay(client, small, stripe_local).status_code == 200
    assert pay(client, big, stripe_local, number="+525512345670").status_code == 200
    assert "payment_method_options" not in created[0]  # 30.00 is not above 30
    assert created[1]["payment_method_options"] == ASKED
    assert_ledger_balanced()


@pytest.mark.django_db
def test_a_3d_secure_card_above_the_amount_authenticates_then_pays(created, stripe_local):
    client = shopper()
    age(client.user, 30)
    big = ProductFactory(retail_price=Decimal("35.00"))
    body = prepare(client, big).json()
    stripe_local.browser_confirm_setup(body["setupClientSecret"], THREE_D_SECURE)
    action = client.post(CHECKOUT, {"paymentId": body["paymentId"]}, format="json")
    assert action.status_code == 202 and action.json()["status"] == "requires_action"
    assert created[0]["payment_method_options"] == ASKED
    stripe_local.browser_authenticate(action.json()["clientSecret"], success=True)
    done = client.post(CHECKOUT, {"paymentId": body["paymentId"]}, format="json")
    assert done.status_code == 200 and done.json()["status"] == "captured"
    assert_ledger_balanced()


@pytest.mark.django_db
def test_the_amount_is_a_setting_and_covers_card_topups(created, stripe_local, settings):
    settings.CARD_3DS_ABOVE_EUR = 0
    client = shopper()
    assert (
        pay(client, ProductFactory(retail_price=Decimal("5.00")), stripe_local).status_code == 200
    )
    settings.CARD_3DS_ABOVE_EUR = 20
    body = client.post("/api/v1/wallet/topups/prepare", {"amount": "25.00"}, format="json").json()
    stripe_local.browser_confirm_setup(body["setupClientSecret"])
    done = client.post("/api/v1/wallet/topups/checkout", {"topupId": body["topupId"]})
    assert done.status_code == 200, done.content
    assert [c.get("payment_method_options") for c in created] == [ASKED, ASKED]
    assert_ledger_balanced()
