"""Issue 43, item 6: a 402 says what to do. A live wallet's says how much is missing and where
the wallet is topped up (as a test key's says where test money comes from); a 402 answered
to an Idempotency-Key says that the key keeps this answer, so the order goes again with a new
key once funded, and its replay says the same."""

from __future__ import annotations

from decimal import Decimal

import pytest
from rest_framework.test import APIClient

from orders.models import Order
from tests.factories import make_key
from tests.helpers import assert_ledger_balanced, assert_problem, bearer, client_for
from wallet.models import Wallet
from wallet.services import wallet_topup_manual

pytestmark = pytest.mark.django_db

B2B = "/api/v1/api-access/b2b/recharges"
CHECKOUT = "/api/v1/wallet/checkout"
BATCHES = "/api/v1/api-access/b2b/batches"
NUMBER = "+525512345678"
NEW_KEY = "send it again with a new Idempotency-Key"


def order(product, quantity=3):
    return {
        "items": [
            {"productId": product.public_id, "recipientNumber": NUMBER, "quantity": quantity}
        ],
        "baseCurrency": "EUR",
    }


def live_key_client(user) -> APIClient:
    _key, plaintext = make_key(user, mode="live")
    return client_for(plaintext)


def test_a_live_keys_402_says_how_much_is_missing_and_where_to_top_up(reseller, product, settings):
    settings.SITE_URL = "https://shop.example/"
    wallet_topup_manual(account=reseller.account, amount=Decimal("12.00"))
    problem = assert_problem(
        live_key_client(reseller).post(B2B, order(product), HTTP_IDEMPOTENCY_KEY="short"),
        402,
        "insufficient_balance",
    )
    assert "Available balance 12.00 EUR is below the order total 15.00 EUR." in problem["detail"]
    assert "Add at least 3.00 EUR" in problem["detail"]
    assert (
        "by card or bank transfer on the site's Wallet page, https://shop.example/wallet/"
        in (problem["detail"])
    )
    assert "sandbox" not in problem["detail"]
    assert Order.objects.count() == 0
    assert Wallet.objects.get(account=reseller.account).balance == Decimal("12.00")
    assert_ledger_balanced()


def test_a_402_to_an_idempotency_key_says_to_use_a_new_key_once_funded_and_so_does_its_replay(
    reseller, product
):
    client = live_key_client(reseller)
    first = client.post(B2B, order(product), HTTP_IDEMPOTENCY_KEY="poor")
    problem = assert_problem(first, 402, "insufficient_balance")
    assert NEW_KEY in problem["detail"] and "24 hours" in problem["detail"]
    wallet_topup_manual(account=reseller.account, amount=Decimal("100.00"))
    replay = client.post(B2B, order(product), HTTP_IDEMPOTENCY_KEY="poor")
    assert replay.status_code == 402 and replay["Idempotent-Replayed"] == "true"
    assert replay.json()["detail"] == problem["detail"]
    # What the detail says works: a new key places the order.
    assert client.post(B2B, order(product), HTTP_IDEMPOTENCY_KEY="poor-2").status_code == 201
    assert Wallet.objects.get(account=reseller.account).balance == Decimal("85.00")
    assert_ledger_balanced()


def test_a_402_without_an_idempotency_key_does_not_speak_of_one(user, product):
    client = APIClient()
    client.credentials(**bearer(user))
    problem = assert_problem(client.post(CHECKOUT, order(product)), 402, "insufficient_balance")
    assert "Idempotency-Key" not in problem["detail"]
    assert "Add at least 15.00 EUR" in problem["detail"]


def test_a_test_keys_402_says_where_test_money_comes_from_and_to_use_a_new_key(reseller, product):
    key, plaintext = make_key(reseller, mode="test")
    problem = assert_problem(
        client_for(plaintext).post(B2B, order(product), HTTP_IDEMPOTENCY_KEY="first"),
        402,
        "insufficient_balance",
    )
    assert f"sandbox_topup --prefix {key.prefix} --amount 50" in problem["detail"]
    assert NEW_KEY in problem["detail"]
    assert "Wallet page" not in problem["detail"]


def test_a_batch_402_says_the_same(reseller, product):
    wallet_topup_manual(account=reseller.account, amount=Decimal("1.00"))
    problem = assert_problem(
        live_key_client(reseller).post(BATCHES, order(product), HTTP_IDEMPOTENCY_KEY="batch-poor"),
        402,
        "insufficient_balance",
    )
    assert "Add at least 14.00 EUR" in problem["detail"] and NEW_KEY in problem["detail"]


@pytest.mark.parametrize(
    ("language", "missing", "new_key"),
    [
        ("es", "Añade al menos 15.00 EUR", "vuelve a enviarlo con otra Idempotency-Key"),
        ("fr", "Ajoutez au moins 15.00 EUR", "renvoyez-la avec une nouvelle Idempotency-Key"),
    ],
)
def test_the_402_speaks_the_callers_language(reseller, product, language, missing, new_key):
    problem = assert_problem(
        live_key_client(reseller).post(
            B2B, order(product), HTTP_IDEMPOTENCY_KEY="lang", HTTP_ACCEPT_LANGUAGE=language
        ),
        402,
        "insufficient_balance",
    )
    assert missing in problem["detail"] and new_key in problem["detail"]
