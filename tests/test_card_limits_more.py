"""The card limits beyond the contract's five (docs/fraud.md): an account's own limits set by
staff (back office, ``set_card_limits``), per client address and per hour, and a lower cap for
a first card payment; against a real localstripe, the races in threads on PostgreSQL."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from decimal import Decimal
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from backoffice.models import StaffAction
from checkout.models import CardCheckout, CardLimitOverride
from payments.models import Payment
from tests.card_support import stripe_settings
from tests.factories import ProductFactory
from tests.fraud_support import (
    MASTERCARD,
    age,
    assert_refused,
    checkout_call,
    confirmed,
    pay,
    prepare,
    race,
    shopper,
)
from tests.helpers import assert_ledger_balanced, second_factor_login

HOUR = 3600


@pytest.fixture
def product(db):
    return ProductFactory(retail_price=Decimal("5.00"))


def at(client, address: str):
    client.defaults["REMOTE_ADDR"] = address
    return client


# -- a first card payment ------------------------------------------------------------------


@pytest.mark.django_db
def test_a_first_card_payment_over_the_first_purchase_cap_is_refused(stripe_local):
    big = ProductFactory(retail_price=Decimal("55.00"))
    small = ProductFactory(retail_price=Decimal("5.00"))
    client = shopper()
    age(client.user, 30)  # an old account: the new-account caps do not apply
    body = assert_refused(prepare(client, big))
    assert "first card payment" in body["detail"] and "50" in body["detail"]
    assert Payment.objects.count() == 0
    assert pay(client, small, stripe_local).status_code == 200
    assert pay(client, big, stripe_local, number="+525512345670").status_code == 200
    assert_ledger_balanced()


@pytest.mark.django_db
def test_a_declined_first_payment_leaves_the_next_one_first(stripe_local):
    from tests.card_support import DECLINED

    small = ProductFactory(retail_price=Decimal("5.00"))
    big = ProductFactory(retail_price=Decimal("55.00"))
    client = shopper()
    age(client.user, 30)
    pay(client, small, stripe_local, card=DECLINED)
    assert_refused(prepare(client, big, "+525512345670"))


# -- per hour, per client address ------------------------------------------------------------


@pytest.mark.django_db
def test_any_account_is_held_to_its_hourly_card_payments(product, stripe_local, settings):
    settings.CARD_LIMIT_PER_ACCOUNT_PER_HOUR = 2
    client = shopper()
    age(client.user, 30)
    for n in range(2):
        assert pay(client, product, stripe_local, number=f"+52551234567{n}").status_code == 200
    body = assert_refused(prepare(client, product, "+525512345679"), at_most=HOUR)
    assert "one hour" in body["detail"]


@pytest.mark.django_db
def test_the_per_address_limits_count_every_account(product, stripe_local, settings):
    settings.CARD_LIMIT_PER_ADDRESS_PER_DAY = 3
    for n in range(3):
        client = at(shopper(), "203.0.113.7")
        assert pay(client, product, stripe_local, number=f"+52551234567{n}").status_code == 200
    assert set(CardCheckout.objects.values_list("client_address", flat=True)) == {"203.0.113.7"}
    late = at(shopper(), "203.0.113.7")
    body = assert_refused(prepare(late, product, "+525512345679"))
    assert "network address" in body["detail"]
    elsewhere = at(shopper(), "198.51.100.2")
    assert pay(elsewhere, product, stripe_local, number="+525512345679").status_code == 200


@pytest.mark.django_db
def test_the_per_address_hourly_limit_is_counted_again_at_checkout(product, stripe_local, settings):
    """Prepared from elsewhere, paid from the address at its hourly limit: refused before the
    PaymentIntent is created."""
    settings.CARD_LIMIT_PER_ADDRESS_PER_HOUR = 1
    first = at(shopper(), "203.0.113.8")
    assert pay(first, product, stripe_local).status_code == 200
    second = at(shopper(), "198.51.100.3")
    payment_id = confirmed(second, product, stripe_local, "+525512345670", MASTERCARD)
    at(second, "203.0.113.8")
    refused = second.post("/api/v1/payments/checkout", {"paymentId": payment_id}, format="json")
    assert_refused(refused, at_most=HOUR)
    assert Payment.objects.get(public_id=payment_id).status == "pending"


@pytest.mark.django_db(transaction=True)
def test_racing_checkouts_from_one_address_let_exactly_the_cap_through(localstripe, settings):
    stripe_settings(settings, localstripe)
    settings.CARD_LIMIT_PER_ADDRESS_PER_DAY = 3
    product = ProductFactory(retail_price=Decimal("5.00"))
    clients = [at(shopper(), "203.0.113.9") for _ in range(7)]
    ids = [
        confirmed(c, product, localstripe, f"+52551234567{n}", MASTERCARD)
        for n, c in enumerate(clients)
    ]
    statuses = race([checkout_call(c, p) for c, p in zip(clients, ids, strict=True)])
    assert sorted(statuses) == [200] * 3 + [429] * 4
    assert Payment.objects.filter(status="captured").count() == 3


# -- an account's own limits ---------------------------------------------------------------


@pytest.mark.django_db
def test_staff_raise_one_accounts_limit_with_the_cli(product, stripe_local):
    trusted, other = shopper(), shopper()
    out = io.StringIO()
    call_command(
        "set_card_limits",
        "--email",
        trusted.user.email,
        "--new-account-per-day",
        "5",
        "--note",
        "known shop, vouched for",
        stdout=out,
    )
    assert "new_account_per_day = 5 (the account's own)" in out.getvalue()
    assert "per_card_per_day = 5 (CARD_LIMIT_PER_CARD_PER_DAY)" in out.getvalue()
    for n in range(4):
        assert pay(trusted, product, stripe_local, number=f"+52551234567{n}").status_code == 200
    for n in range(3):
        response = pay(other, product, stripe_local, number=f"+52551234568{n}", card=MASTERCARD)
        assert response.status_code == 200
    assert_refused(prepare(other, product, "+525512345689"))  # the others keep the setting
    call_command("set_card_limits", "--email", trusted.user.email, "--reset", stdout=io.StringIO())
    assert CardLimitOverride.objects.count() == 0
    assert_refused(prepare(trusted, product, "+525512345679"))  # 4 counted > 3


@pytest.mark.django_db
def test_an_accounts_own_lower_limit_on_a_number(product, stripe_local):
    client = shopper()
    call_command(
        "set_card_limits", "--email", client.user.email, "--per-number-per-day", "1",
        stdout=io.StringIO(),
    )  # fmt: skip
    assert pay(client, product, stripe_local).status_code == 200
    assert_refused(prepare(client, product))
    call_command(
        "set_card_limits", "--email", client.user.email, "--per-number-per-day", "default",
        stdout=io.StringIO(),
    )  # fmt: skip
    assert prepare(client, product).status_code == 201


@pytest.mark.parametrize(
    "args", [["--per-card-per-day", "x"], ["--per-card-per-day", "-1"], ["--email", "no@x.y"]]
)
def test_set_card_limits_refuses_bad_input(args, user):
    with pytest.raises(CommandError):
        call_command("set_card_limits", "--email", user.email, *args, stdout=io.StringIO())
    assert CardLimitOverride.objects.count() == 0


def test_staff_set_an_accounts_limits_in_the_back_office(client, staff, user):
    second_factor_login(client, staff)
    url = "/admin/checkout/cardlimitoverride/add/"
    assert client.get(url).status_code == 200
    empty = client.post(url, {"account": user.account_id, "note": "nothing"})
    assert empty.status_code == 200 and CardLimitOverride.objects.count() == 0
    bad = client.post(url, {"account": user.account_id, "per_card_per_day": "-3"})
    assert bad.status_code == 200 and CardLimitOverride.objects.count() == 0
    done = client.post(
        url, {"account": user.account_id, "first_purchase_amount": "100", "note": "reviewed"}
    )
    assert done.status_code == 302, done.content
    row = CardLimitOverride.objects.get()
    assert (row.first_purchase_amount, row.note, row.updated_by) == (100, "reviewed", staff)
    assert StaffAction.objects.filter(action="account.card_limits").count() == 1
    listing = client.get("/admin/checkout/cardlimitoverride/")
    assert listing.status_code == 200
    deleted = client.post(
        f"/admin/checkout/cardlimitoverride/{row.pk}/delete/", {"post": "yes"}, follow=True
    )
    assert deleted.status_code == 200 and CardLimitOverride.objects.count() == 0


@pytest.mark.django_db
def test_a_new_accounts_first_payment_of_the_contracts_50_eur_is_taken(stripe_local):
    """Contract section 16: a new account may pay 50 EUR by card in 24 hours; a first-payment
    cap of 40 refused a first payment of 45."""
    fifty = ProductFactory(retail_price=Decimal("50.00"))
    client = shopper()
    assert pay(client, fifty, stripe_local).status_code == 200
    assert_refused(prepare(client, ProductFactory(retail_price=Decimal("1.00"))))  # 51 > 50
    assert_ledger_balanced()


def test_the_new_limits_are_environment_variables_with_their_defaults():
    names = {
        "CARD_LIMIT_PER_ACCOUNT_PER_HOUR": 10,
        "CARD_LIMIT_PER_ADDRESS_PER_DAY": 300,
        "CARD_LIMIT_PER_ADDRESS_PER_HOUR": 100,
        "CARD_LIMIT_FIRST_PURCHASE_AMOUNT": 50,
    }
    code = (
        "import django; django.setup(); from django.conf import settings as s; "
        f"print(*[getattr(s, n) for n in {list(names)!r}])"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("CARD_LIMIT_")}
    env["DJANGO_SETTINGS_MODULE"] = "reseller.settings.local"
    env.pop("DATABASE_URL", None)
    root = Path(__file__).resolve().parent.parent
    for extra, expected in (({}, list(names.values())), ({n: "7" for n in names}, [7] * 4)):
        result = subprocess.run(
            [sys.executable, "-c", code], cwd=root, env={**env, **extra},
            capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        assert result.returncode == 0, result.stderr
        assert [int(v) for v in result.stdout.split()] == expected


# -- card top-ups of the wallet count as card purchases --------------------------------------

TOPUP_PREPARE = "/api/v1/wallet/topups/prepare"
TOPUP_CHECKOUT = "/api/v1/wallet/topups/checkout"


def topup_prepare(client, amount: str):
    return client.post(TOPUP_PREPARE, {"amount": amount}, format="json")


def topup(client, server, amount: str, card=None):
    from tests.card_support import VISA

    prepared = topup_prepare(client, amount)
    assert prepared.status_code == 201, prepared.content
    body = prepared.json()
    server.browser_confirm_setup(body["setupClientSecret"], card or VISA)
    response = client.post(TOPUP_CHECKOUT, {"topupId": body["topupId"]}, format="json")
    response.topup_id = body["topupId"]
    return response


@pytest.mark.django_db
def test_card_topups_and_payments_share_a_new_accounts_limits(product, stripe_local):
    from wallet.models import TopUp

    client = shopper()
    assert topup(client, stripe_local, "10.00").status_code == 200
    assert pay(client, product, stripe_local).status_code == 200
    assert topup(client, stripe_local, "10.00", card=MASTERCARD).status_code == 200
    # Three card purchases: neither a fourth top-up nor a payment.
    body = assert_refused(topup_prepare(client, "5.00"))
    assert "3" in body["detail"]
    assert_refused(prepare(client, product, "+525512345670"))
    assert TopUp.objects.count() == 2  # nothing written for the refused one
    assert_ledger_balanced()


@pytest.mark.django_db
def test_a_card_topup_is_held_to_the_amount_and_first_purchase_caps(product, stripe_local):
    client = shopper()
    body = assert_refused(topup_prepare(client, "55.00"))
    assert "first card payment" in body["detail"]
    assert topup(client, stripe_local, "30.00").status_code == 200
    assert_refused(topup_prepare(client, "25.00"))  # 30 + 25 > 50 EUR in 24 h
    assert topup(client, stripe_local, "20.00").status_code == 200


@pytest.mark.django_db
def test_a_declined_card_topup_gives_its_place_back(product, stripe_local, settings):
    from tests.card_support import DECLINED

    settings.CARD_LIMIT_NEW_ACCOUNT_PER_DAY = 1
    client = shopper()
    assert topup(client, stripe_local, "10.00", card=DECLINED).status_code == 402
    assert topup(client, stripe_local, "10.00").status_code == 200
    assert_refused(topup_prepare(client, "10.00"))


@pytest.mark.django_db
def test_the_card_limit_counts_topups_across_accounts(product, stripe_local, settings):
    settings.CARD_LIMIT_PER_CARD_PER_DAY = 2
    for _n in range(2):
        assert topup(shopper(), stripe_local, "10.00").status_code == 200
    refused = topup(shopper(), stripe_local, "10.00")  # the same card, a third account
    body = assert_refused(refused)
    assert "card" in body["detail"]
    from wallet.models import TopUp

    assert TopUp.objects.get(public_id=refused.topup_id).status == "pending"


@pytest.mark.django_db(transaction=True)
def test_racing_card_topups_of_one_new_account_let_exactly_the_cap_through(localstripe, settings):
    from wallet.models import TopUp

    stripe_settings(settings, localstripe)
    client = shopper()
    ids = []
    for _n in range(6):
        body = topup_prepare(client, "5.00").json()
        localstripe.browser_confirm_setup(body["setupClientSecret"], MASTERCARD)
        ids.append(body["topupId"])

    def call(topup_id):
        return lambda: client.post(TOPUP_CHECKOUT, {"topupId": topup_id}, format="json").status_code

    statuses = race([call(topup_id) for topup_id in ids])
    assert sorted(statuses) == [200] * 3 + [429] * 3
    assert TopUp.objects.filter(status="approved").count() == 3
    assert_ledger_balanced()
