"""``whenPromotionScheduled`` (contract §5): an order of a product whose promotion starts soon
holds its recharges as ``waitlisted`` by default ("wait"), or sends them at once ("sendNow"),
through every way of placing an order: B2B, wallet checkout, batches and the card prepare."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal

import pytest
from django.utils import timezone

from accounts.services import account_set_b2b
from orders.models import Order
from recharges.models import Recharge
from recharges.processor import recharge_process
from tests.factories import PromotionFactory, UserFactory, make_key
from tests.helpers import assert_ledger_balanced, assert_problem, client_for
from wallet.services import wallet_topup_manual

pytestmark = pytest.mark.django_db

B2B = "/api/v1/api-access/b2b/recharges"
BATCHES = "/api/v1/api-access/b2b/batches"
NUMBER = "+525512345678"


@pytest.fixture
def soon(product):
    """A promotion of the product's operator starting in two hours (within the horizon)."""
    PromotionFactory(operator=product.operator, starts_at=timezone.now() + timedelta(hours=2))
    return product


def shop():
    user = UserFactory()
    account_set_b2b(account=user.account, is_b2b=True)
    wallet_topup_manual(account=user.account, amount=Decimal("200.00"))
    _key, plaintext = make_key(user, mode="live")
    return client_for(plaintext)


def body(product, **extra):
    return {
        "items": [{"productId": product.public_id, "recipientNumber": NUMBER, "quantity": 1}],
        "baseCurrency": "EUR",
        **extra,
    }


def processed(order: dict) -> str:
    recharge = Recharge.objects.get(public_id=order["recharges"][0]["id"])
    return recharge_process(recharge_id=recharge.pk).status


def test_by_default_a_scheduled_promotion_holds_the_recharge(soon):
    answer = shop().post(B2B, body(soon), format="json", HTTP_IDEMPOTENCY_KEY="a")
    assert answer.status_code == 201
    assert answer.json()["whenPromotionScheduled"] == "wait"
    assert processed(answer.json()) == "waitlisted"


def test_send_now_dispatches_at_once_without_the_promotion(soon):
    answer = shop().post(
        B2B, body(soon, whenPromotionScheduled="sendNow"), format="json", HTTP_IDEMPOTENCY_KEY="b"
    )
    assert answer.status_code == 201
    assert answer.json()["whenPromotionScheduled"] == "sendNow"
    assert processed(answer.json()) == "delivered"
    assert_ledger_balanced()


def test_an_unknown_choice_is_a_400_naming_the_field_and_places_nothing(soon):
    answer = shop().post(
        B2B, body(soon, whenPromotionScheduled="later"), format="json", HTTP_IDEMPOTENCY_KEY="c"
    )
    assert_problem(answer, 400, "validation_error")
    assert "whenPromotionScheduled" in answer.content.decode()
    assert not Order.objects.exists()


def test_a_batch_may_send_now(soon):
    answer = shop().post(
        BATCHES,
        body(soon, whenPromotionScheduled="sendNow"),
        format="json",
        HTTP_IDEMPOTENCY_KEY="d",
    )
    assert answer.status_code == 202, answer.content
    recharge = Recharge.objects.get()
    assert recharge.promotion_wait is False
    assert recharge_process(recharge_id=recharge.pk).status == "delivered"


def test_the_choice_is_part_of_the_idempotent_request(soon):
    client = shop()
    client.post(B2B, body(soon), format="json", HTTP_IDEMPOTENCY_KEY="e")
    again = client.post(
        B2B, body(soon, whenPromotionScheduled="sendNow"), format="json", HTTP_IDEMPOTENCY_KEY="e"
    )
    assert_problem(again, 422, "idempotency_key_reused")
