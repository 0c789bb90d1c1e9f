"""Ranged amounts and extra fields end to end (issue 40): placed through the B2B API, sent by
the processor's one path to the providers' fakes over real HTTP, delivered with the exact
amount, costed at that amount, and failed over to the next route that takes it.

The ``routed`` catalog (tests/provider_support.py) syncs Ding's ``MX_TL_TopUp_Range`` (20 to
500 MXN, SendValue on the line between 1.20 and 28.00 USD) into Telcel's range product."""

from __future__ import annotations

from decimal import Decimal
from io import StringIO

import pytest
from django.core.management import call_command

from accounts.services import account_set_b2b
from catalog.models import Product
from recharges import processor
from recharges.models import Recharge, RechargeAttempt
from tests.factories import UserFactory, make_key
from tests.fakes.dtone import ranged_product
from tests.helpers import assert_ledger_balanced, assert_problem, client_for, fund
from tests.provider_support import NUMBER, telcel_100
from upstreams.models import Route
from upstreams.routing import Router
from wallet.models import LedgerEntry, Wallet

pytestmark = pytest.mark.django_db
S = Recharge.Status
B2B = "/api/v1/api-access/b2b/recharges"


def cli(*args) -> str:
    out = StringIO()
    call_command(*args, stdout=out)
    return out.getvalue().strip()


def b2b_client(funds: str = "200.00"):
    user = UserFactory()
    account_set_b2b(account=user.account, is_b2b=True)
    fund(user, funds)
    _key, plaintext = make_key(user, mode="live")
    return user, client_for(plaintext)


def order(client, product, **line):
    item = {"productId": product.public_id, "recipientNumber": NUMBER, "quantity": 1, **line}
    return client.post(
        B2B,
        {"items": [item], "baseCurrency": "EUR"},
        format="json",
        HTTP_IDEMPOTENCY_KEY=f"k-{product.pk}-{len(line)}-{line.get('localAmount')}",
    )


def telcel_range(routed) -> Product:
    return Product.objects.get(operator=routed["telcel"], denomination="range")


def balance(user) -> Decimal:
    return Wallet.objects.get(account=user.account, kind="live").balance


def test_a_ranged_recharge_is_delivered_with_the_exact_amount_and_its_cost(routed, ding):
    product = telcel_range(routed)
    route = Route.objects.get(product=product, provider__name="ding-1")
    assert route.accepts(Decimal("150"))
    user, client = b2b_client()
    response = order(client, product, localAmount="150")
    assert response.status_code == 201, response.content
    body = response.json()
    assert body["recharges"][0]["localAmount"] == "150.00"
    assert body["recharges"][0]["localCurrency"] == "MXN"
    recharge = Recharge.objects.get()
    assert recharge.amount == product.price_at(Decimal("150"))

    assert processor.recharge_process(recharge_id=recharge.pk).status == S.DELIVERED
    recharge.refresh_from_db()
    assert recharge.provider == "ding-1" and recharge.local_amount == Decimal("150.00")
    # Ding was sent the SendValue of 150 MXN on its line, and we recorded that amount's cost.
    sent = ding.transfers[recharge.public_id]["Price"]
    assert Decimal(str(sent["SendValue"])) == route.send_value_at(Decimal("150"))
    # ... which Ding turns into 150 MXN or a few hundredths more (it takes SendValue in
    # cents, rounded up for us), never less; the recharge shows what the recipient got.
    received = Decimal(str(sent["ReceiveValue"]))
    assert Decimal("150") <= received <= Decimal("150.20")
    assert recharge.delivered_amount == received
    shown = client.get(f"{B2B}/{recharge.public_id}").json()
    assert (shown["localAmount"], shown["deliveredAmount"]) == ("150.00", f"{received:.2f}")
    # The day's reconciliation finds Ding's ReceiveValue where it looks: matched.
    day = recharge.created_at.date().isoformat()
    line = cli("reconcile_provider", "--provider", "ding-1", "--date", day)
    assert line.startswith("matched 1, missing here 0, missing there 0, mismatched 0"), line
    assert recharge.cost is not None
    assert recharge.cost_currency == route.cost_currency
    assert recharge.margin is not None
    assert balance(user) == Decimal("200.00") - recharge.amount
    assert_ledger_balanced()


def test_an_amount_the_range_does_not_take_charges_nothing(routed):
    product = telcel_range(routed)
    user, client = b2b_client()
    for amount in ("19", "501", "150.005"):
        response = order(client, product, localAmount=amount)
        assert_problem(response, 400, "invalid_amount")
    assert balance(user) == Decimal("200.00")
    assert not Recharge.objects.exists()
    assert not LedgerEntry.objects.filter(kind="payment").exists()
    assert_ledger_balanced()


def test_a_refused_range_fails_over_to_the_next_route_that_takes_the_amount(routed, ding, dtone):
    """Two providers take 150 MXN of Telcel's range: the cheaper one at that amount refuses it
    for good; the other sends the same amount, and only one top-up is made."""
    dtone.products.append(
        ranged_product(
            id=30050,
            operator_id=1450,
            operator_name="Telcel",
            country_iso="MEX",
            country_name="Mexico",
            unit="MXN",
            minimum=10,
            maximum=1000,
            increment=1,
            rate=18.5,
            fee=0.2,
        )
    )
    cli("sync_provider_catalog", "--provider", "dtone-1", "--country", "MX")
    product = telcel_range(routed)
    amount = Decimal("150")
    ranked = [r.provider.name for r in Router([product]).ranked(product, amount=amount)]
    assert sorted(ranked) == ["ding-1", "dtone-1"]
    first, second = ranked
    if first == "ding-1":
        ding.refuse_next(1)
    else:
        dtone.refuse(1)
    user, client = b2b_client()
    assert order(client, product, localAmount="150").status_code == 201
    recharge = Recharge.objects.get()
    assert processor.recharge_process(recharge_id=recharge.pk).status == S.DELIVERED
    recharge.refresh_from_db()
    sends = list(
        RechargeAttempt.objects.filter(recharge=recharge, action="send")
        .order_by("id")
        .values_list("provider", "outcome")
    )
    assert sends == [(first, "refused"), (second, "delivered")]
    assert recharge.provider == second and recharge.local_amount == amount
    route = Route.objects.get(product=product, provider__name=second)
    if second == "dtone-1":
        assert dtone.bodies[-1]["destination"]["amount"] == 150.0
    else:
        assert Decimal(str(ding.transfers[recharge.public_id]["Price"]["SendValue"])) == (
            route.send_value_at(amount)
        )
    assert balance(user) == Decimal("200.00") - recharge.amount
    assert_ledger_balanced()


def test_extra_fields_reach_the_provider_under_its_names(routed, reloadly):
    product = telcel_100(routed)
    Product.objects.filter(pk=product.pk).update(required_fields=["senderPhone"])
    Route.objects.filter(product=product).exclude(provider__name="reloadly-1").update(active=False)
    user, client = b2b_client()
    missing = order(client, product)
    body = assert_problem(missing, 400, "validation_error")
    assert {"field": "items[0].fields.senderPhone", "code": "missing_field"}.items() <= (
        body["errors"][0].items()
    )
    malformed = order(client, product, fields={"senderPhone": "415 555"})
    body = assert_problem(malformed, 400, "validation_error")
    assert body["errors"][0]["code"] == "invalid_field"
    assert balance(user) == Decimal("200.00") and not Recharge.objects.exists()

    placed = order(client, product, fields={"senderPhone": "+1 415 555 0123"})
    assert placed.status_code == 201, placed.content
    assert placed.json()["recharges"][0]["fields"] == {"senderPhone": "+14155550123"}
    recharge = Recharge.objects.get()
    assert processor.recharge_process(recharge_id=recharge.pk).status == S.DELIVERED
    sent = reloadly.received[recharge.public_id]
    assert sent["senderPhone"] == {"countryCode": "US", "number": "4155550123"}
    lookup = client.get(f"{B2B}/{recharge.public_id}")
    assert lookup.json()["fields"] == {"senderPhone": "+14155550123"}
    assert_ledger_balanced()


def test_the_readme_range_order_works_on_the_demo_catalog():
    """README, "Recharges (B2B) and the wallet": the demo's Telcel any amount, 150 MXN with a
    sender's phone, found by its name and ordered as the curl example does."""
    call_command("seed_demo", stdout=StringIO())
    _user, client = b2b_client()
    found = client.get(
        "/api/v1/catalog/recharge-products", {"country": "MX", "q": "any amount"}
    ).json()["results"]
    assert [p["denomination"] for p in found] == ["range"]
    response = client.post(
        B2B,
        {
            "items": [
                {
                    "productId": found[0]["id"],
                    "recipientNumber": "+525512345678",
                    "quantity": 1,
                    "localAmount": "150",
                    "fields": {"senderPhone": "+14155550123"},
                }
            ],
            "baseCurrency": "EUR",
        },
        format="json",
        HTTP_IDEMPOTENCY_KEY="order-0002",
    )
    assert response.status_code == 201, response.content
    (recharge,) = response.json()["recharges"]
    assert (recharge["localAmount"], recharge["localCurrency"]) == ("150.00", "MXN")
    assert recharge["fields"] == {"senderPhone": "+14155550123"}
    assert_ledger_balanced()


def test_a_range_top_up_that_gave_less_than_the_amount_chosen_is_a_mismatch(routed, ding):
    """Ding's rate moved after the last sync: the SendValue of 150 MXN now gives the
    recipient less. The recharge keeps what Ding says it gave, and the day's reconciliation
    reports it, though Ding's report agrees with what Ding answered."""
    product = telcel_range(routed)
    _user, client = b2b_client()
    assert order(client, product, localAmount="150").status_code == 201
    recharge = Recharge.objects.get()
    item = ding.products["MX_TL_TopUp_Range"]
    item["Minimum"]["ReceiveValue"] *= Decimal("0.98")  # 2 % fewer pesos a dollar
    item["Maximum"]["ReceiveValue"] *= Decimal("0.98")
    assert processor.recharge_process(recharge_id=recharge.pk).status == S.DELIVERED
    recharge.refresh_from_db()
    assert recharge.delivered_amount is not None and recharge.delivered_amount < 150
    day = recharge.created_at.date().isoformat()
    line = cli("reconcile_provider", "--provider", "ding-1", "--date", day)
    assert line.startswith("matched 0, missing here 0, missing there 0, mismatched 1"), line
