"""Wallet checkout and B2B recharges (docs/contract.md sections 4 and 5), on PostgreSQL."""

from decimal import Decimal

import pytest
from rest_framework.test import APIClient

from orders.models import Order
from orders.serializers import order_body
from orders.services import PlacedOrder
from payments.models import Payment
from recharges import processor
from recharges.models import Recharge
from tests.factories import UserFactory, make_key
from tests.helpers import assert_ledger_balanced, assert_problem, bearer, client_for, place
from wallet.models import LedgerEntry, Wallet
from wallet.services import wallet_topup_manual

pytestmark = pytest.mark.django_db

B2B = "/api/v1/api-access/b2b/recharges"
QUOTE = "/api/v1/payments/quote"
CHECKOUT = "/api/v1/wallet/checkout"
MX_NUMBER = "+525512345678"


def key_client(user, mode="live") -> APIClient:
    _key, plaintext = make_key(user, mode=mode)
    return client_for(plaintext)


def fund(user, amount):
    wallet_topup_manual(account=user.account, amount=Decimal(amount))


def envelope(product, number=MX_NUMBER, quantity=1, **extra):
    return {
        "items": [
            {"productId": product.public_id, "recipientNumber": number, "quantity": quantity}
        ],
        "baseCurrency": "EUR",
        **extra,
    }


def balance(user) -> Decimal:
    return Wallet.objects.get(account=user.account, kind="live").balance


def test_b2b_recharge_debits_exactly_and_answers_201_with_order_payment_and_recharges(
    reseller, product
):
    fund(reseller, "100.00")
    response = key_client(reseller).post(
        B2B, envelope(product, quantity=3), HTTP_IDEMPOTENCY_KEY="order-1"
    )
    assert response.status_code == 201, response.content
    body = response.json()
    assert body["id"].startswith("ord_")
    assert body["total"] == "15.00" and body["currency"] == "EUR" and body["livemode"] is True
    assert body["payment"]["status"] == "captured" and body["payment"]["method"] == "wallet"
    assert body["payment"]["amount"] == "15.00"
    assert len(body["recharges"]) == 3
    assert {r["status"] for r in body["recharges"]} == {"queued"}
    assert all(r["id"].startswith("rch_") and r["amount"] == "5.00" for r in body["recharges"])
    assert body["recharges"][0]["recipientNumber"] == MX_NUMBER
    assert balance(reseller) == Decimal("85.00")
    assert_ledger_balanced()


def test_wallet_checkout_with_a_web_session_debits_the_wallet(user, product):
    fund(user, "20.00")
    client = APIClient()
    client.credentials(**bearer(user))
    response = client.post(CHECKOUT, envelope(product, quantity=2))
    assert response.status_code == 201, response.content
    assert balance(user) == Decimal("10.00")
    assert Recharge.objects.filter(account=user.account).count() == 2
    assert_ledger_balanced()


def test_account_discount_lowers_the_unit_price(user, product):
    user.account.discount_percent = Decimal("10.00")
    user.account.save()
    fund(user, "20.00")
    client = APIClient()
    client.credentials(**bearer(user))
    body = client.post(CHECKOUT, envelope(product, quantity=3)).json()
    assert body["recharges"][0]["amount"] == "4.50"
    assert body["total"] == "13.50"
    assert balance(user) == Decimal("6.50")


def test_insufficient_balance_is_402_and_writes_nothing(reseller, product):
    fund(reseller, "12.00")
    response = key_client(reseller).post(
        B2B, envelope(product, quantity=3), HTTP_IDEMPOTENCY_KEY="order-402"
    )
    body = assert_problem(response, 402, "insufficient_balance")
    assert "12.00 EUR" in body["detail"] and "15.00 EUR" in body["detail"]
    assert balance(reseller) == Decimal("12.00")
    assert Order.objects.count() == Payment.objects.count() == Recharge.objects.count() == 0
    assert LedgerEntry.objects.filter(kind="payment").count() == 0
    assert_ledger_balanced()


@pytest.mark.parametrize(
    "change, field, code",
    [
        ({"recipientNumber": "525512345678"}, "items[0].recipientNumber", "invalid_phone_number"),
        ({"recipientNumber": "+5255ABC45678"}, "items[0].recipientNumber", "invalid_phone_number"),
        (
            {"recipientNumber": "+2348031234567"},
            "items[0].recipientNumber",
            "phone_country_mismatch",
        ),
        ({"quantity": 0}, "items[0].quantity", "min_value"),
        ({"quantity": -1}, "items[0].quantity", "min_value"),
        ({"quantity": 1.5}, "items[0].quantity", "invalid"),
        ({"quantity": "x"}, "items[0].quantity", "invalid"),
        ({"quantity": 21}, "items[0].quantity", "max_value"),
        ({"productId": "prd_doesnotexist"}, "items[0].productId", "unknown_product"),
        ({"price": "0.01"}, "items[0].price", "unknown_field"),
    ],
)
def test_bad_order_lines_are_400_naming_the_field_and_charge_nothing(
    reseller, product, change, field, code
):
    fund(reseller, "100.00")
    payload = envelope(product)
    payload["items"][0].update(change)
    body = assert_problem(
        key_client(reseller).post(B2B, payload, HTTP_IDEMPOTENCY_KEY="bad-1"),
        400,
        "validation_error",
    )
    assert {"field": field, "code": code}.items() <= body["errors"][0].items(), body
    assert balance(reseller) == Decimal("100.00")
    assert Order.objects.count() == 0


@pytest.mark.parametrize(
    "payload, field, code",
    [
        ({"items": [], "baseCurrency": "EUR"}, "items", "empty"),
        ({"baseCurrency": "EUR"}, "items", "required"),
        ({"items": "nope", "baseCurrency": "EUR"}, "items", "not_a_list"),
        (None, "baseCurrency", "unsupported_currency"),
        (None, "balance", "unknown_field"),
    ],
)
def test_bad_order_envelopes_are_400_and_charge_nothing(reseller, product, payload, field, code):
    fund(reseller, "100.00")
    if payload is None:
        payload = (
            envelope(product, baseCurrency="XYZ")
            if field == "baseCurrency"
            else envelope(product, balance="1000000.00")
        )
    body = assert_problem(
        key_client(reseller).post(B2B, payload, HTTP_IDEMPOTENCY_KEY="bad-2"),
        400,
        "validation_error",
    )
    assert {"field": field, "code": code}.items() <= body["errors"][0].items(), body
    assert balance(reseller) == Decimal("100.00")
    assert Order.objects.count() == 0


def test_base_currency_other_than_the_wallet_currency_is_400_currency_mismatch(reseller, product):
    from tests.factories import FxRateFactory

    FxRateFactory(base_currency="EUR", quote_currency="USD")
    fund(reseller, "100.00")
    assert_problem(
        key_client(reseller).post(
            B2B, envelope(product, baseCurrency="USD"), HTTP_IDEMPOTENCY_KEY="usd"
        ),
        400,
        "currency_mismatch",
    )
    assert balance(reseller) == Decimal("100.00")


def test_live_keys_may_order_100_units_per_request_and_no_more(reseller, product):
    fund(reseller, "1000.00")
    client = key_client(reseller)
    items = [{"productId": product.public_id, "recipientNumber": MX_NUMBER, "quantity": 20}] * 5
    ok = client.post(B2B, {"items": items, "baseCurrency": "EUR"}, HTTP_IDEMPOTENCY_KEY="u100")
    assert ok.status_code == 201
    too_many = client.post(
        B2B, {"items": [*items, items[0]], "baseCurrency": "EUR"}, HTTP_IDEMPOTENCY_KEY="u120"
    )
    body = assert_problem(too_many, 400, "validation_error")
    assert body["errors"][0]["code"] == "too_many_units"
    # A quote of what may not be ordered is refused the same way; of what may, priced.
    quoted = client.post(QUOTE, {"items": items, "baseCurrency": "EUR"}, format="json")
    assert quoted.status_code == 200, quoted.content
    refused = client.post(QUOTE, {"items": [*items, items[0]], "baseCurrency": "EUR"})
    assert assert_problem(refused, 400, "validation_error")["errors"][0]["code"] == (
        "too_many_units"
    )
    assert balance(reseller) == Decimal("500.00")


def test_more_than_50_lines_is_400(reseller, product):
    fund(reseller, "1000.00")
    items = [{"productId": product.public_id, "recipientNumber": MX_NUMBER, "quantity": 1}] * 51
    body = assert_problem(
        key_client(reseller).post(
            B2B, {"items": items, "baseCurrency": "EUR"}, HTTP_IDEMPOTENCY_KEY="l51"
        ),
        400,
        "validation_error",
    )
    assert body["errors"][0]["field"] == "items"


def test_b2b_needs_an_idempotency_key_and_stores_nothing_without_one(reseller, product):
    fund(reseller, "100.00")
    assert_problem(
        key_client(reseller).post(B2B, envelope(product)), 400, "idempotency_key_required"
    )
    assert Order.objects.count() == 0


def test_b2b_refuses_web_sessions_and_non_b2b_keys(user, product):
    client = APIClient()
    client.credentials(**bearer(user))
    assert_problem(
        client.post(B2B, envelope(product), HTTP_IDEMPOTENCY_KEY="a"), 403, "api_key_required"
    )
    assert_problem(
        key_client(user).post(B2B, envelope(product), HTTP_IDEMPOTENCY_KEY="a"),
        403,
        "b2b_not_enabled",
    )


def test_recharges_are_enqueued_only_after_commit(
    reseller, product, django_capture_on_commit_callbacks
):
    fund(reseller, "100.00")
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        response = key_client(reseller).post(
            B2B, envelope(product, quantity=2), HTTP_IDEMPOTENCY_KEY="commit"
        )
    assert response.status_code == 201
    assert len(callbacks) == 1
    assert set(Recharge.objects.values_list("status", flat=True)) == {"queued"}


def test_a_failure_between_payment_and_recharges_leaves_nothing(reseller, product):
    """The order, payment, debit and recharges are one transaction: break the last step
    (PostgreSQL refuses the recharges' insert, as a full disk would)."""
    from django.db import connection

    fund(reseller, "100.00")
    with connection.cursor() as cursor:  # DDL is transactional: gone with the test's rollback
        cursor.execute(
            "CREATE FUNCTION refuse_recharges() RETURNS trigger LANGUAGE plpgsql AS"
            " $$ BEGIN RAISE EXCEPTION 'disk full while writing recharges'; END $$;"
            " CREATE TRIGGER refuse_recharges BEFORE INSERT ON orders_recharge"
            " FOR EACH ROW EXECUTE FUNCTION refuse_recharges();"
        )
    client = key_client(reseller)
    client.raise_request_exception = False
    response = client.post(B2B, envelope(product), HTTP_IDEMPOTENCY_KEY="crash")
    assert response.status_code == 500
    assert Order.objects.count() == Payment.objects.count() == 0
    assert LedgerEntry.objects.filter(kind="payment").count() == 0
    assert balance(reseller) == Decimal("100.00")
    assert_ledger_balanced()


def test_payment_history_lists_own_payments_newest_first_with_recharges(reseller, product):
    fund(reseller, "100.00")
    client = key_client(reseller)
    for n in range(3):
        client.post(B2B, envelope(product, quantity=n + 1), HTTP_IDEMPOTENCY_KEY=f"h{n}")
    other = UserFactory()
    fund(other, "10.00")
    body = client.get("/api/v1/payments/history?limit=2").json()
    assert body["count"] == 3 and body["limit"] == 2 and body["next"]
    assert [len(p["recharges"]) for p in body["results"]] == [3, 2]
    assert body["results"][0]["id"].startswith("pay_")


def test_wallet_balance_shows_available_currency_and_livemode(reseller):
    fund(reseller, "42.50")
    body = key_client(reseller).get("/api/v1/wallet/balance").json()
    assert body == {"available": "42.50", "currency": "EUR", "livemode": True}


def test_the_201_answer_equals_the_order_as_stored(reseller, product):
    """The answer is rendered from memory; it must say exactly what a fresh read says."""
    import json

    from djangorestframework_camel_case.util import camelize

    from orders.selectors import order_for_response
    from orders.serializers import OrderOut

    fund(reseller, "100.00")
    body = (
        key_client(reseller)
        .post(B2B, envelope(product, quantity=3), HTTP_IDEMPOTENCY_KEY="same-as-stored")
        .json()
    )
    stored = OrderOut(order_for_response(order_id=Order.objects.get().pk)).data
    assert body == json.loads(json.dumps(camelize(stored)))


def test_the_201_of_a_b2b_order_is_rendered_from_the_rows_it_wrote_without_reading_them_back(
    reseller, product
):
    """The order, its payment, lines and recharges are written and then rendered from the
    same objects (``PlacedOrder``): not one SELECT of them during the request."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    fund(reseller, "100.00")
    client = key_client(reseller)
    with CaptureQueriesContext(connection) as captured:
        response = client.post(B2B, envelope(product, quantity=3), HTTP_IDEMPOTENCY_KEY="rows")
    assert response.status_code == 201, response.content
    assert len(response.json()["recharges"]) == 3
    assert len(response.json()["payment"]["recharges"]) == 3
    tables = ("orders_order", "orders_orderline", "orders_payment", "orders_recharge")
    read_back = [
        query["sql"]
        for query in captured.captured_queries
        if query["sql"].startswith("SELECT")
        and any(f'FROM "{table}"' in query["sql"] for table in tables)
    ]
    assert read_back == []


def test_the_plain_order_body_equals_the_documented_serializer_for_every_shape(reseller, product):
    """``order_body`` (what the 201 is rendered with) against ``OrderOut`` (the schema): two
    recharges, one failed and refunded (failure code and message, refunded amount)."""
    fund(reseller, "20.00")
    placed = place(reseller, product, number="+525512349990", quantity=2)  # 9990: refused
    first = placed.recharges.order_by("id").first()
    assert processor.recharge_process(recharge_id=first.pk).status == "failed"
    from orders.selectors import order_for_response
    from orders.serializers import OrderOut

    order = order_for_response(order_id=placed.pk)
    assert order.payment.refunded_amount > 0
    rows = PlacedOrder(
        order=order,
        payment=order.payment,
        lines=list(order.lines.all()),
        recharges=list(order.recharges.all()),
    )
    assert order_body(rows) == OrderOut(order).data
    assert any(r["failure_code"] for r in order_body(rows)["recharges"])
