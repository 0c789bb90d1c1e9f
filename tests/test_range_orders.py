"""Ranged amounts on every order line (contract section 17, issue 40): the buyer chooses the
``localAmount`` of a range product within its range and on a step, and pays
A / rate + fee rounded up to the cent, less the account's discount. Cart items, quotes,
wallet checkout, B2B, card prepare, batches (JSON and files) and the sandbox check it alike:
anything else is 400 ``invalid_amount`` naming the range, and nothing is charged."""

from __future__ import annotations

import io
import json
from decimal import ROUND_CEILING, Decimal

import openpyxl
import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from djangorestframework_camel_case.util import camelize
from hypothesis import given
from hypothesis import strategies as st
from rest_framework.test import APIClient

from accounts.services import account_set_b2b
from catalog.models import Product
from emails.models import Email
from orders.models import Batch, CartItem, Order, OrderLine
from orders.selectors import order_for_response
from orders.serializers import OrderOut
from payments.models import Payment
from recharges.models import Recharge
from recharges.serializers import RechargeDetailOut
from sandbox.balances import sandbox_topup
from tests.factories import (
    FxRateFactory,
    OperatorFactory,
    ProductFactory,
    RangeProductFactory,
    UserFactory,
    make_country,
    make_key,
)
from tests.helpers import (
    assert_ledger_balanced,
    assert_problem,
    bearer,
    client_for,
    fund,
    process,
)
from upstreams.models import PriceRule, Provider, ProviderOperator, Route
from upstreams.pricing import products_reprice
from wallet.models import LedgerEntry, Wallet

pytestmark = pytest.mark.django_db

B2B = "/api/v1/api-access/b2b/recharges"
CHECKOUT = "/api/v1/wallet/checkout"
BATCHES = "/api/v1/api-access/b2b/batches"
CART = "/api/v1/cart"
CART_ITEMS = "/api/v1/cart/items"
QUOTE = "/api/v1/payments/quote"
PREPARE = "/api/v1/payments/prepare"
CARD_CHECKOUT = "/api/v1/payments/checkout"
NUMBER = "+525512345678"


@pytest.fixture
def ranged():
    """10.00 to 500.00 MXN in steps of 5.00, priced A / 18.3 + 0.50 EUR: 100 MXN is
    5.4644… + 0.50 = 5.9644…, 5.97 EUR rounded up."""
    return RangeProductFactory(pricing_rate=Decimal("18.3"))


def price(amount: str, rate: str = "18.3", fee: str = "0.50") -> Decimal:
    """An independent reckoning of A / rate + fee, rounded up to the cent."""
    return (Decimal(amount) / Decimal(rate) + Decimal(fee)).quantize(
        Decimal("0.01"), rounding=ROUND_CEILING
    )


def b2b_user(funds: str = "100.00"):
    user = UserFactory()
    account_set_b2b(account=user.account, is_b2b=True)
    fund(user, funds)
    return user


def key_client(user, mode: str = "live") -> APIClient:
    _key, plaintext = make_key(user, mode=mode)
    return client_for(plaintext)


def web_client(user) -> APIClient:
    client = APIClient()
    client.credentials(**bearer(user))
    return client


def line(product, amount=None, *, number=NUMBER, quantity=1) -> dict:
    item = {"productId": product.public_id, "recipientNumber": number, "quantity": quantity}
    if amount is not None:
        item["localAmount"] = amount
    return item


def envelope(*items) -> dict:
    return {"items": list(items), "baseCurrency": "EUR"}


def balance(user) -> Decimal:
    return Wallet.objects.get(account=user.account, kind="live").balance


def assert_nothing_charged(user, funds: str = "100.00") -> None:
    assert balance(user) == Decimal(funds)
    assert Order.objects.count() == Payment.objects.count() == Recharge.objects.count() == 0
    assert not LedgerEntry.objects.filter(kind="payment").exists()
    assert_ledger_balanced()


def assert_invalid_amount(response, field: str = "items[0].localAmount") -> dict:
    """400 ``invalid_amount``: the detail names the range and its currency, ``errors`` the
    line."""
    body = assert_problem(response, 400, "invalid_amount")
    assert body["title"] == "Invalid amount"
    for named in ("10.00", "500.00", "5.00", "MXN"):
        assert named in body["detail"], body
    assert {"field": field, "code": "invalid_amount"}.items() <= body["errors"][0].items(), body
    return body


# -- the price of an amount ----------------------------------------------------------------


@given(
    low=st.integers(min_value=1, max_value=999_999),
    steps=st.integers(min_value=0, max_value=1000),
    rate=st.decimals(min_value="0.01", max_value="100000", places=8),
    fee=st.decimals(min_value="0", max_value="100", places=2),
)
def test_the_price_of_an_amount_is_a_over_rate_plus_fee_rounded_up_and_grows_with_a(
    low, steps, rate, fee
):
    product = Product(
        denomination="range",
        range_min=Decimal("0.01"),
        range_max=Decimal("99999999.99"),
        range_step=Decimal("0.01"),
        pricing_rate=rate,
        pricing_fee=fee,
    )
    amount = Decimal(low) / 100
    larger = amount + Decimal(steps) / 100
    exact = amount / rate + fee
    at = product.price_at(amount)
    assert at == at.quantize(Decimal("0.01"))  # whole cents
    assert exact <= at < exact + Decimal("0.01")  # rounded up, by less than a cent
    assert product.price_at(larger) >= at  # a larger amount never costs less


# -- each channel takes a valid amount and prices it -----------------------------------------


def test_b2b_sells_a_chosen_amount_at_its_price_and_the_recharges_show_it(ranged):
    user = b2b_user()
    response = key_client(user).post(
        B2B, envelope(line(ranged, "100", quantity=2)), HTTP_IDEMPOTENCY_KEY="range-1"
    )
    assert response.status_code == 201, response.content
    body = response.json()
    assert price("100") == Decimal("5.97")
    assert body["total"] == "11.94" and body["payment"]["amount"] == "11.94"
    assert body["lines"][0]["localAmount"] == "100.00"
    assert body["lines"][0]["localCurrency"] == "MXN"
    assert body["lines"][0]["unitPrice"] == "5.97" and body["lines"][0]["lineTotal"] == "11.94"
    for recharge in body["recharges"] + body["payment"]["recharges"]:
        assert recharge["amount"] == "5.97" and recharge["currency"] == "EUR"
        assert recharge["localAmount"] == "100.00" and recharge["localCurrency"] == "MXN"
    assert OrderLine.objects.get().local_amount == Decimal("100.00")
    assert {r.local_amount for r in Recharge.objects.all()} == {Decimal("100.00")}
    assert balance(user) == Decimal("88.06")
    assert_ledger_balanced()


def test_wallet_checkout_prices_the_amount_less_the_accounts_discount(ranged):
    user = UserFactory()
    user.account.discount_percent = Decimal("10.00")
    user.account.save()
    fund(user, "50.00")
    response = web_client(user).post(CHECKOUT, envelope(line(ranged, "100.00")), format="json")
    assert response.status_code == 201, response.content
    body = response.json()
    # 5.97 less 10 %: 5.373, half up to 5.37.
    assert body["recharges"][0]["amount"] == "5.37" and body["total"] == "5.37"
    assert balance(user) == Decimal("44.63")
    (receipt_line,) = Email.objects.get(kind=Email.Kind.RECEIPT).context["lines"]
    assert receipt_line["local_amount"] == "100.00" and receipt_line["local_currency"] == "MXN"
    assert_ledger_balanced()


def test_a_fixed_product_takes_no_amount_or_its_own_and_records_its_face_value(product):
    user = b2b_user()
    client = key_client(user)
    for key, item in (("fixed-1", line(product)), ("fixed-2", line(product, "100.00"))):
        response = client.post(B2B, envelope(item), HTTP_IDEMPOTENCY_KEY=key)
        assert response.status_code == 201, response.content
        recharge = response.json()["recharges"][0]
        assert recharge["localAmount"] == "100.00" and recharge["localCurrency"] == "MXN"
        assert recharge["amount"] == "5.00"
    assert {r.local_amount for r in Recharge.objects.all()} == {Decimal("100.00")}
    assert {line.local_amount for line in OrderLine.objects.all()} == {Decimal("100.00")}


def test_the_quote_prices_each_amount_and_converts_it(ranged):
    FxRateFactory(base_currency="EUR", quote_currency="USD", rate=Decimal("1.10"))
    client = web_client(UserFactory())
    response = client.post(
        QUOTE,
        {
            "items": [line(ranged, "100"), line(ranged, "500", quantity=2)],
            "baseCurrency": "USD",
        },
        format="json",
    )
    assert response.status_code == 200, response.content
    body = response.json()
    assert [(q["localAmount"], q["localCurrency"]) for q in body["lines"]] == [
        ("100.00", "MXN"),
        ("500.00", "MXN"),
    ]
    # 5.97 EUR and 500 / 18.3 + 0.50 = 27.8224… → 27.83 EUR, each at 1.10 USD.
    assert [q["unitPrice"] for q in body["lines"]] == ["6.57", "30.61"]
    assert body["total"] == "67.79" and body["currency"] == "USD"


def test_cart_items_keep_their_amount_and_another_amount_is_another_line(ranged):
    user = UserFactory()
    client = web_client(user)
    first = client.post(CART_ITEMS, line(ranged, "100"), format="json")
    assert first.status_code == 201, first.content
    created = first.json()
    assert created["localAmount"] == "100.00" and created["localCurrency"] == "MXN"
    assert created["unitPrice"] == "5.97" and created["lineTotal"] == "5.97"
    same = client.post(CART_ITEMS, line(ranged, "100.00"), format="json").json()
    assert same["id"] == created["id"] and same["quantity"] == 2
    other = client.post(CART_ITEMS, line(ranged, "50"), format="json").json()
    assert other["id"] != created["id"] and other["localAmount"] == "50.00"
    cart = client.get(CART).json()
    assert [(i["localAmount"], i["quantity"], i["unitPrice"]) for i in cart["items"]] == [
        ("100.00", 2, "5.97"),
        ("50.00", 1, str(price("50"))),
    ]
    assert cart["total"] == str(2 * price("100") + price("50"))
    assert sorted(CartItem.objects.values_list("local_amount", flat=True)) == [
        Decimal("50.00"),
        Decimal("100.00"),
    ]
    quote = client.post(QUOTE, {"sessionId": "default"}, format="json").json()
    assert [(q["localAmount"], q["quantity"]) for q in quote["lines"]] == [
        ("100.00", 2),
        ("50.00", 1),
    ]

    fund(user, "50.00")
    sessions = client.post(CHECKOUT, envelope(line(ranged, "20")), format="json")
    assert sessions.status_code == 201
    assert sessions.json()["recharges"][0]["localAmount"] == "20.00"


def test_card_prepare_prices_the_amount_and_the_paid_recharges_carry_it(ranged, stripe_local):
    user = UserFactory()
    client = web_client(user)
    body = client.post(
        PREPARE, {"items": [line(ranged, "100", quantity=2)], "baseCurrency": "EUR"}, format="json"
    )
    assert body.status_code == 201, body.content
    prepared = body.json()
    assert prepared["amount"] == "11.94"
    assert OrderLine.objects.get().local_amount == Decimal("100.00")
    confirmed = stripe_local.browser_confirm_setup(prepared["setupClientSecret"])
    assert confirmed["status"] == "succeeded"
    paid = client.post(CARD_CHECKOUT, {"paymentId": prepared["paymentId"]}, format="json")
    assert paid.status_code == 200, paid.content
    recharges = paid.json()["recharges"]
    assert [(r["localAmount"], r["amount"]) for r in recharges] == [("100.00", "5.97")] * 2
    assert_ledger_balanced()


def test_card_prepare_refuses_a_bad_amount_and_opens_no_payment(ranged, stripe_local):
    client = web_client(UserFactory())
    response = client.post(
        PREPARE, {"items": [line(ranged, "7")], "baseCurrency": "EUR"}, format="json"
    )
    assert_invalid_amount(response)
    assert not Payment.objects.exists() and not Order.objects.exists()


# -- refused amounts: 400 invalid_amount, nothing charged ------------------------------------


REFUSED = [
    pytest.param(None, id="missing"),
    pytest.param("102", id="off-step"),
    pytest.param("100.01", id="off-step-cents"),
    pytest.param("100.005", id="past-the-cent"),
    pytest.param("5", id="below-min"),
    pytest.param("505", id="above-max"),
    pytest.param("-100", id="negative"),
    pytest.param("0", id="zero"),
]


@pytest.mark.parametrize("amount", REFUSED)
def test_b2b_refuses_an_amount_outside_the_range_or_off_a_step_and_charges_nothing(ranged, amount):
    user = b2b_user()
    response = key_client(user).post(
        B2B, envelope(line(ranged, amount)), HTTP_IDEMPOTENCY_KEY="bad-amount"
    )
    body = assert_invalid_amount(response)
    assert body["detail"] == "Send localAmount from 10.00 to 500.00 MXN, in steps of 5.00."
    assert len(body["errors"]) == 1
    assert_nothing_charged(user)


@pytest.mark.parametrize("amount", ["50", "100.01", 100.5])
def test_a_fixed_product_refuses_another_amount(product, amount):
    user = b2b_user()
    response = key_client(user).post(
        B2B, envelope(line(product, amount)), HTTP_IDEMPOTENCY_KEY="bad-fixed"
    )
    body = assert_problem(response, 400, "invalid_amount")
    assert "100.00 MXN" in body["detail"], body
    assert body["errors"] == [
        {"field": "items[0].localAmount", "code": "invalid_amount", "message": body["detail"]}
    ]
    assert_nothing_charged(user)


@pytest.mark.parametrize("amount", ["ten", "NaN", "Infinity", True, [], {}])
def test_an_amount_that_is_not_a_number_is_a_validation_error(ranged, amount):
    user = b2b_user()
    response = key_client(user).post(
        B2B, envelope(line(ranged, amount)), format="json", HTTP_IDEMPOTENCY_KEY="nan"
    )
    body = assert_problem(response, 400, "validation_error")
    assert body["errors"][0]["field"] == "items[0].localAmount"
    assert_nothing_charged(user)


def test_wallet_checkout_refuses_a_bad_amount_and_charges_nothing(ranged):
    user = UserFactory()
    fund(user, "100.00")
    response = web_client(user).post(CHECKOUT, envelope(line(ranged, "3")), format="json")
    assert_invalid_amount(response)
    assert_nothing_charged(user)


def test_the_cart_and_the_quote_refuse_a_bad_amount(ranged):
    client = web_client(UserFactory())
    assert_invalid_amount(client.post(CART_ITEMS, line(ranged), format="json"), "localAmount")
    assert not CartItem.objects.exists()
    assert_invalid_amount(
        client.post(QUOTE, {"items": [line(ranged, "12.5")]}, format="json"),
    )


def test_several_bad_amounts_are_each_named_and_the_detail_counts_them(ranged, product):
    user = b2b_user()
    response = key_client(user).post(
        B2B,
        envelope(line(ranged, "100"), line(ranged, "1"), line(product, "1"), line(ranged)),
        HTTP_IDEMPOTENCY_KEY="several",
    )
    body = assert_invalid_amount(response, "items[1].localAmount")
    assert [e["field"] for e in body["errors"]] == [
        "items[1].localAmount",
        "items[2].localAmount",
        "items[3].localAmount",
    ]
    assert body["detail"].endswith("2 more amounts are refused: see errors.")
    assert_nothing_charged(user)


def test_a_bad_amount_beside_another_fault_is_a_validation_error_naming_both(ranged):
    user = b2b_user()
    response = key_client(user).post(
        B2B,
        envelope(line(ranged, "1"), line(ranged, "100", number="+2348031234567")),
        HTTP_IDEMPOTENCY_KEY="mixed",
    )
    body = assert_problem(response, 400, "validation_error")
    assert [(e["field"], e["code"]) for e in body["errors"]] == [
        ("items[0].localAmount", "invalid_amount"),
        ("items[1].recipientNumber", "phone_country_mismatch"),
    ]
    assert_nothing_charged(user)


def test_a_range_product_not_priced_yet_is_409_product_unavailable(ranged):
    Product.objects.filter(pk=ranged.pk).update(pricing_rate=None, pricing_fee=None)
    user = b2b_user()
    response = key_client(user).post(
        B2B, envelope(line(ranged, "100")), HTTP_IDEMPOTENCY_KEY="unpriced"
    )
    assert_problem(response, 409, "product_unavailable")
    assert_nothing_charged(user)


def test_a_cart_line_whose_amount_the_product_no_longer_takes_is_refused_at_checkout(ranged):
    user = UserFactory()
    fund(user, "100.00")
    client = web_client(user)
    assert client.post(CART_ITEMS, line(ranged, "100"), format="json").status_code == 201
    Product.objects.filter(pk=ranged.pk).update(range_step=Decimal("20.00"))
    cart = client.get(CART).json()  # still shown, at its price
    assert cart["items"][0]["localAmount"] == "100.00" and cart["items"][0]["unitPrice"] == "5.97"
    body = assert_problem(
        client.post(QUOTE, {"sessionId": "default"}, format="json"), 400, "invalid_amount"
    )
    assert "in steps of 20.00" in body["detail"]
    assert CartItem.objects.count() == 1


# -- the sandbox ----------------------------------------------------------------------------


def test_a_test_key_sells_and_refuses_amounts_as_a_live_key_does(ranged):
    user = b2b_user()
    key, plaintext = make_key(user, mode="test")
    sandbox_topup(key=key, amount="100")
    client = client_for(plaintext)
    sandbox = Wallet.objects.get(api_key=key, kind="sandbox")

    refused = client.post(B2B, envelope(line(ranged, "7")), HTTP_IDEMPOTENCY_KEY="t-bad")
    assert_invalid_amount(refused)
    sandbox.refresh_from_db()
    assert sandbox.balance == Decimal("100.00") and not Order.objects.exists()

    sold = client.post(B2B, envelope(line(ranged, "100")), HTTP_IDEMPOTENCY_KEY="t-good")
    assert sold.status_code == 201, sold.content
    recharge = sold.json()["recharges"][0]
    assert recharge["status"] == "success" and recharge["localAmount"] == "100.00"
    sandbox.refresh_from_db()
    assert sandbox.balance == Decimal("94.03")
    shown = client.get("/api/v1/api-access/sandbox").json()["recharges"][0]
    assert shown["localAmount"] == "100.00" and shown["localCurrency"] == "MXN"
    assert balance(user) == Decimal("100.00")  # the live wallet is untouched
    assert_ledger_balanced()


# -- batches ----------------------------------------------------------------------------------


def test_a_batch_takes_amounts_and_names_each_refused_one(ranged):
    user = b2b_user()
    client = key_client(user)
    refused = client.post(
        BATCHES,
        envelope(line(ranged, "100"), line(ranged, "101")),
        format="json",
        HTTP_IDEMPOTENCY_KEY="batch-bad",
    )
    assert_invalid_amount(refused, "items[1].localAmount")
    assert_nothing_charged(user)

    placed = client.post(
        BATCHES,
        envelope(line(ranged, "100"), line(ranged, "250", quantity=2)),
        format="json",
        HTTP_IDEMPOTENCY_KEY="batch-good",
    )
    assert placed.status_code == 202, placed.content
    assert placed.json()["total"] == str(price("100") + 2 * price("250"))
    assert sorted(Recharge.objects.values_list("local_amount", flat=True)) == [
        Decimal("100.00"),
        Decimal("250.00"),
        Decimal("250.00"),
    ]
    assert_ledger_balanced()


@pytest.fixture
def shop(client):
    user = b2b_user("1000.00")
    client.force_login(user)
    return user


@pytest.fixture
def telcel_range():
    mexico = make_country("MX", "Mexico", "+52", "MXN")
    operator = OperatorFactory(country=mexico, slug="telcel", name="Telcel")
    ProductFactory(operator=operator, retail_price=Decimal("1.00"), local_amount=Decimal("100"))
    return RangeProductFactory(operator=operator, pricing_rate=Decimal("18.3"))


def csv_file(rows: list[str]) -> SimpleUploadedFile:
    return SimpleUploadedFile("topups.csv", "\n".join(rows).encode(), content_type="text/csv")


def test_a_batch_file_with_a_local_amount_column_is_sold_at_those_amounts(
    client, shop, telcel_range
):
    rows = [
        "recipientNumber,productId,localAmount,quantity",
        f"{NUMBER},{telcel_range.public_id},100,1",
        f'{NUMBER},{telcel_range.public_id},"250,00",2',
    ]
    confirm = client.post("/batches/upload/", {"file": csv_file(rows)})
    assert confirm.status_code == 200, confirm.context.get("errors")
    assert confirm.context["total"] == price("100") + 2 * price("250")
    placed = client.post("/batches/confirm/", {"token": confirm.context["token"]})
    assert placed.status_code == 302
    batch = Batch.objects.get()
    assert sorted(batch.order.recharges.values_list("local_amount", flat=True)) == [
        Decimal("100.00"),
        Decimal("250.00"),
        Decimal("250.00"),
    ]
    assert balance(shop) == Decimal("1000.00") - batch.order.total
    assert_ledger_balanced()


def test_a_batch_file_names_the_line_and_column_of_a_refused_amount(client, shop, telcel_range):
    rows = [
        "recipientNumber,productId,Local Amount",
        f"{NUMBER},{telcel_range.public_id},100",
        f"{NUMBER},{telcel_range.public_id},",
        f"{NUMBER},{telcel_range.public_id},12",
    ]
    response = client.post("/batches/upload/", {"file": csv_file(rows)})
    assert response.status_code == 400
    errors = [(e.line, e.column, e.message) for e in response.context["errors"]]
    expected = "Send localAmount from 10.00 to 500.00 MXN, in steps of 5.00."
    assert errors == [(3, "Local Amount", expected), (4, "Local Amount", expected)]
    assert_nothing_charged(shop, "1000.00")


def test_a_batch_file_by_operator_and_amount_finds_the_range_product(client, shop, telcel_range):
    book = openpyxl.Workbook()
    sheet = book.active
    sheet.append(["recipientNumber", "operator", "amount"])
    sheet.append([NUMBER, "MX/telcel", 100])  # the fixed product of that face value
    sheet.append([NUMBER, "MX/telcel", 35])  # only the range sends it
    sheet.append([NUMBER, "MX/telcel", 37])  # nobody sends it
    data = io.BytesIO()
    book.save(data)
    response = client.post(
        "/batches/upload/", {"file": SimpleUploadedFile("topups.xlsx", data.getvalue())}
    )
    assert response.status_code == 400
    assert [(e.line, e.column) for e in response.context["errors"]] == [(4, "operator")]

    sheet.delete_rows(4)
    data = io.BytesIO()
    book.save(data)
    confirm = client.post(
        "/batches/upload/", {"file": SimpleUploadedFile("topups.xlsx", data.getvalue())}
    )
    assert confirm.status_code == 200, confirm.context.get("errors")
    assert confirm.context["total"] == Decimal("1.00") + price("35")
    client.post("/batches/confirm/", {"token": confirm.context["token"]})
    recharges = Batch.objects.get().order.recharges.order_by("id")
    assert [(r.product_id, r.local_amount) for r in recharges] == [
        (Product.objects.get(denomination="fixed").pk, Decimal("100.00")),
        (telcel_range.pk, Decimal("35.00")),
    ]
    assert_ledger_balanced()


# -- reading recharges ----------------------------------------------------------------------


def test_recharge_lookups_and_webhook_bodies_show_the_chosen_amount(ranged):
    user = b2b_user()
    client = key_client(user)
    placed = client.post(B2B, envelope(line(ranged, "45")), HTTP_IDEMPOTENCY_KEY="read")
    recharge_id = placed.json()["recharges"][0]["id"]
    one = client.get(f"{B2B}/{recharge_id}").json()
    assert one["localAmount"] == "45.00" and one["localCurrency"] == "MXN"
    assert one["amount"] == str(price("45"))
    listed = client.get(B2B).json()["results"][0]
    assert listed["localAmount"] == "45.00" and listed["localCurrency"] == "MXN"
    payment = client.get(f"/api/v1/payments/{placed.json()['payment']['id']}").json()
    assert payment["recharges"][0]["localAmount"] == "45.00"
    event_body = RechargeDetailOut(Recharge.objects.get(public_id=recharge_id)).data
    assert event_body["local_amount"] == "45.00" and event_body["local_currency"] == "MXN"


def test_the_201_of_a_range_order_equals_the_stored_order_rendered_by_its_serializer(ranged):
    """``order_body`` renders the 201 from the rows written; ``OrderOut`` reads them back: the
    local amounts agree."""
    user = b2b_user()
    body = (
        key_client(user)
        .post(B2B, envelope(line(ranged, "55", quantity=2)), HTTP_IDEMPOTENCY_KEY="same")
        .json()
    )
    stored = OrderOut(order_for_response(order_id=Order.objects.get().pk)).data
    assert body == json.loads(json.dumps(camelize(stored)))
    assert body["lines"][0]["localAmount"] == "55.00"


# -- an amount no route serves over the floor ------------------------------------------------


@pytest.fixture
def crossing():
    """A range product of 50 to 500 MXN sold by two crossing routes ("flat": 1.00 + 0.04 A
    EUR, "lean": 0.05 A EUR), priced at a 10 % markup through both ends: at 100 MXN, where
    they cross, no route leaves the floor's margin (docs/pricing.md's worked example)."""
    product = RangeProductFactory(
        range_min=Decimal("50.00"), range_max=Decimal("500.00"), range_step=Decimal("1.00")
    )
    for name, fee, per_peso in (("flat", "1.00", "0.04"), ("lean", "0.00", "0.05")):
        call_command("create_provider", "--name", name, "--kind", "simulator")
        row = Provider.objects.get(name=name)
        upstream = ProviderOperator.objects.create(
            provider=row,
            upstream_id=f"{name}-op",
            name=product.operator.name,
            country=product.country_id,
            operator=product.operator,
        )
        Route.objects.create(
            provider=row,
            upstream_operator=upstream,
            product=product,
            cost=Decimal(fee),
            cost_per_unit=Decimal(per_peso),
            cost_currency="EUR",
            min_amount=product.range_min,
            max_amount=product.range_max,
            step=product.range_step,
        )
    PriceRule.objects.create(product=product, markup_percent=Decimal("10"))
    products_reprice(product_ids=[product.pk])
    product.refresh_from_db()
    return product


def test_an_amount_no_route_serves_over_the_floor_is_409_and_charges_nothing(crossing):
    user = b2b_user()
    client = key_client(user)
    refused = client.post(
        B2B, envelope(line(crossing, "50"), line(crossing, "100")), HTTP_IDEMPOTENCY_KEY="floor"
    )
    body = assert_problem(refused, 409, "product_unavailable")
    assert "100" in body["detail"] and "MXN" in body["detail"]
    assert_nothing_charged(user)
    sold = client.post(B2B, envelope(line(crossing, "50")), HTTP_IDEMPOTENCY_KEY="floor-ok")
    assert sold.status_code == 201, sold.content
    assert sold.json()["recharges"][0]["amount"] == str(crossing.price_at(Decimal("50")))


def test_a_delivered_range_recharge_shows_the_amount_it_sent(ranged):
    user = b2b_user()
    client = key_client(user)
    placed = client.post(B2B, envelope(line(ranged, "45")), HTTP_IDEMPOTENCY_KEY="delivered")
    process(Order.objects.get())
    one = client.get(f"{B2B}/{placed.json()['recharges'][0]['id']}").json()
    assert one["status"] == "delivered", one
    assert one["deliveredAmount"] == "45.00" and one["deliveredCurrency"] == "MXN"
    assert one["localAmount"] == "45.00"
    assert_ledger_balanced()


def test_an_amount_only_a_disabled_provider_takes_is_409_and_charges_nothing(crossing):
    """Contract section 17: an amount inside the range that no usable route accepts is 409.
    "lean" alone takes 300 to 500 here; disabled, those amounts are refused, and "flat"'s
    amounts still sell."""
    Route.objects.filter(provider__name="lean").update(min_amount=Decimal("300.00"))
    Route.objects.filter(provider__name="flat").update(max_amount=Decimal("299.00"))
    call_command("set_provider", "--name", "lean", "--enabled", "false")
    crossing.refresh_from_db()
    user = b2b_user()
    client = key_client(user)
    refused = client.post(B2B, envelope(line(crossing, "400")), HTTP_IDEMPOTENCY_KEY="off")
    assert_problem(refused, 409, "product_unavailable")
    assert_nothing_charged(user)
    sold = client.post(B2B, envelope(line(crossing, "50")), HTTP_IDEMPOTENCY_KEY="on")
    assert sold.status_code == 201, sold.content
