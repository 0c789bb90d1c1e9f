"""Card purchase limits (docs/fraud.md, decisions section 16) against a real localstripe:
a limit already reached is refused at prepare, the card's own at checkout before the
PaymentIntent is created; 429 ``card_limit_reached`` with ``Retry-After``, nothing charged."""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import timedelta
from decimal import Decimal
from pathlib import Path

import pytest
from django.utils import timezone

from checkout.models import CardCheckout
from payments.models import Payment
from recharges.models import Recharge
from tests.card_support import DECLINED, VISA, stripe_settings
from tests.factories import ProductFactory
from tests.fraud_support import (
    CHECKOUT,
    MASTERCARD,
    NUMBER,
    PREPARE,
    age,
    assert_refused,
    checkout_call,
    confirmed,
    intents_of,
    pay,
    prepare,
    race,
    shopper,
)
from tests.helpers import assert_problem


@pytest.fixture
def product(db):
    return ProductFactory(retail_price=Decimal("5.00"))


# -- new accounts -------------------------------------------------------------------------


@pytest.mark.django_db
def test_new_account_is_refused_its_fourth_card_payment_at_prepare(product, stripe_local):
    client = shopper()
    for n in range(3):
        assert pay(client, product, stripe_local, number=f"+52551234567{n}").status_code == 200
    first = CardCheckout.objects.order_by("limit_counted_at").first()

    response = prepare(client, product, "+525512345679")
    body = assert_refused(response)
    assert "3" in body["detail"] and "Nothing was charged" in body["detail"]
    oldest_leaves = (first.limit_counted_at + timedelta(hours=24) - timezone.now()).total_seconds()
    assert abs(int(response["Retry-After"]) - oldest_leaves) < 5
    # Contract section 2: every 429 also carries RateLimit and RateLimit-Policy.
    assert response["RateLimit-Policy"] == "3;w=86400"
    assert response["RateLimit"] == f"limit=3, remaining=0, reset={response['Retry-After']}"
    assert Payment.objects.count() == 3  # nothing written for the refused one


@pytest.mark.django_db
def test_new_account_amount_cap_is_refused_at_prepare(stripe_local, settings):
    settings.CARD_LIMIT_NEW_ACCOUNT_AMOUNT_PER_DAY = 50
    product = ProductFactory(retail_price=Decimal("30.00"))
    client = shopper()
    assert pay(client, product, stripe_local).status_code == 200
    assert_refused(prepare(client, product, "+525512345670"))  # 30 + 30 > 50
    assert Payment.objects.count() == 1


@pytest.mark.django_db
def test_a_payment_prepared_and_never_confirmed_does_not_count(product, stripe_local):
    client = shopper()
    for n in range(4):  # four prepared, none confirmed
        assert prepare(client, product, f"+52551234567{n}").status_code == 201
    for n in range(3):
        assert pay(client, product, stripe_local, number=f"+52551234568{n}").status_code == 200


@pytest.mark.django_db
def test_a_declined_card_gives_its_place_back(product, stripe_local):
    client = shopper()
    assert_problem(pay(client, product, stripe_local, card=DECLINED), 402, "card_declined")
    for n in range(3):
        assert pay(client, product, stripe_local, number=f"+52551234567{n}").status_code == 200


@pytest.mark.django_db
def test_an_old_account_is_not_under_the_new_account_caps(stripe_local):
    product = ProductFactory(retail_price=Decimal("40.00"))
    client = shopper()
    age(client.user, 8)
    for n in range(4):  # more than 3 payments and 50 EUR
        response = pay(client, product, stripe_local, number=f"+52551234567{n}", card=VISA)
        assert response.status_code == 200, response.content


@pytest.mark.django_db
def test_the_new_account_limit_is_counted_again_at_checkout(product, stripe_local, settings):
    """Prepare does not reserve: of two payments prepared at the last place, the second
    checkout is refused before its PaymentIntent is created."""
    settings.CARD_LIMIT_NEW_ACCOUNT_PER_DAY = 1
    client = shopper()
    bodies = [prepare(client, product, f"+52551234567{n}").json() for n in range(2)]
    for body in bodies:
        stripe_local.browser_confirm_setup(body["setupClientSecret"])
    first = client.post(CHECKOUT, {"paymentId": bodies[0]["paymentId"]}, format="json")
    assert first.status_code == 200, first.content
    second = client.post(CHECKOUT, {"paymentId": bodies[1]["paymentId"]}, format="json")
    assert_refused(second)
    assert intents_of(stripe_local, bodies[1]["paymentId"]) == []
    assert Payment.objects.get(public_id=bodies[1]["paymentId"]).status == "pending"


# -- per number, per card: across accounts ------------------------------------------------


@pytest.mark.django_db
def test_per_number_limit_counts_every_account(product, stripe_local, settings):
    settings.CARD_LIMIT_PER_NUMBER_PER_DAY = 3
    assert pay(shopper(), product, stripe_local, quantity=2).status_code == 200
    assert pay(shopper(), product, stripe_local, card=MASTERCARD).status_code == 200
    late = shopper()
    assert_refused(prepare(late, product))  # 3 recharges already went to the number
    assert Payment.objects.filter(account=late.user.account).count() == 0
    assert prepare(late, product, "+525512345670").status_code == 201  # another number


@pytest.mark.django_db
def test_per_card_limit_is_refused_at_checkout_before_any_charge(product, stripe_local, settings):
    settings.CARD_LIMIT_PER_CARD_PER_DAY = 2
    for n in range(2):
        assert pay(shopper(), product, stripe_local, number=f"+52551234567{n}").status_code == 200
    client = shopper()
    refused = pay(client, product, stripe_local, number="+525512345679")
    body = assert_refused(refused)
    assert "card" in body["detail"]
    assert intents_of(stripe_local, refused.payment_id) == []  # Stripe was never asked
    payment = Payment.objects.get(public_id=refused.payment_id)
    assert payment.status == "pending" and Recharge.objects.filter(order=payment.order).count() == 0
    # Another card pays the same payment.
    renewed = client.post(PREPARE, {"paymentId": refused.payment_id}, format="json").json()
    stripe_local.browser_confirm_setup(renewed["setupClientSecret"], MASTERCARD)
    again = client.post(CHECKOUT, {"paymentId": refused.payment_id}, format="json")
    assert again.status_code == 200, again.content


# -- concurrency: exact under racing checkouts --------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_racing_checkouts_of_one_new_account_let_exactly_the_cap_through(localstripe, settings):
    stripe_settings(settings, localstripe)
    product = ProductFactory(retail_price=Decimal("5.00"))
    client = shopper()
    ids = [confirmed(client, product, localstripe, f"+52551234567{n}") for n in range(8)]
    statuses = race([checkout_call(client, payment_id) for payment_id in ids])
    assert sorted(statuses) == [200] * 3 + [429] * 5
    assert Payment.objects.filter(status="captured").count() == 3
    for payment in Payment.objects.exclude(status="captured"):
        assert intents_of(localstripe, payment.public_id) == []


@pytest.mark.django_db(transaction=True)
def test_racing_checkouts_from_many_accounts_on_one_card_and_number(localstripe, settings):
    stripe_settings(settings, localstripe)
    settings.CARD_LIMIT_PER_CARD_PER_DAY = 4
    settings.CARD_LIMIT_PER_NUMBER_PER_DAY = 2
    product = ProductFactory(retail_price=Decimal("5.00"))
    clients = [shopper() for _ in range(8)]
    # Four accounts race for one number (2 allowed) with one card; four others race with
    # another card (4 allowed) to other numbers: each key is counted on its own.
    same_number = [confirmed(c, product, localstripe, NUMBER, MASTERCARD) for c in clients[:4]]
    same_card = [
        confirmed(c, product, localstripe, f"+52551234560{n}") for n, c in enumerate(clients[4:])
    ]
    calls = [checkout_call(c, p) for c, p in zip(clients[:4], same_number, strict=True)]
    calls += [checkout_call(c, p) for c, p in zip(clients[4:], same_card, strict=True)]
    statuses = race(calls)
    assert sorted(statuses[:4]) == [200] * 2 + [429] * 2
    assert sorted(statuses[4:]) == [200] * 4


@pytest.mark.django_db(transaction=True)
def test_racing_checkouts_of_one_card_across_accounts_let_exactly_the_cap_through(
    localstripe, settings
):
    stripe_settings(settings, localstripe)
    settings.CARD_LIMIT_PER_CARD_PER_DAY = 3
    product = ProductFactory(retail_price=Decimal("5.00"))
    clients = [shopper() for _ in range(7)]
    ids = [confirmed(c, product, localstripe, f"+52551234567{n}") for n, c in enumerate(clients)]
    statuses = race([checkout_call(c, p) for c, p in zip(clients, ids, strict=True)])
    assert sorted(statuses) == [200] * 3 + [429] * 4
    assert CardCheckout.objects.filter(completed_at__isnull=False).count() == 3


# -- settings -----------------------------------------------------------------------------


def test_each_limit_is_an_environment_variable_with_its_default():
    names = {
        "CARD_LIMIT_NEW_ACCOUNT_DAYS": 7,
        "CARD_LIMIT_NEW_ACCOUNT_PER_DAY": 3,
        "CARD_LIMIT_NEW_ACCOUNT_AMOUNT_PER_DAY": 50,
        "CARD_LIMIT_PER_NUMBER_PER_DAY": 5,
        "CARD_LIMIT_PER_CARD_PER_DAY": 5,
    }
    code = (
        "import django; django.setup(); from django.conf import settings as s; "
        f"print(*[getattr(s, n) for n in {list(names)!r}])"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("CARD_LIMIT_")}
    env["DJANGO_SETTINGS_MODULE"] = "reseller.settings.local"
    env.pop("DATABASE_URL", None)
    root = Path(__file__).resolve().parent.parent

    def read(extra):
        result = subprocess.run(
            [sys.executable, "-c", code],
            cwd=root,
            env={**env, **extra},
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert result.returncode == 0, result.stderr
        return [int(v) for v in result.stdout.split()]

    assert read({}) == list(names.values())
    assert read({n: str(11 + i) for i, n in enumerate(names)}) == [11, 12, 13, 14, 15]
