"""The /api/v1/admin/* API: staff only, the list envelope, filters and the summary figures."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from accounts.services import account_set_b2b
from orders.models import Order
from payments.models import Payment
from recharges.models import Recharge
from tests.factories import CountryFactory, OperatorFactory, ProductFactory, UserFactory, make_key
from tests.helpers import (
    DELIVERS,
    REJECTS,
    assert_ledger_balanced,
    assert_problem,
    away_from_midnight,
    bearer,
    fund,
    place,
    process,
    sandbox_order,
    second_factor_login,
)
from wallet.models import TopUp, Wallet
from wallet.services import (
    topup_request,
)

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _one_day():
    """These tests compare "today" with the rows they write: never across midnight UTC."""
    with away_from_midnight():
        yield


BASE = "/api/v1/admin/"
ENDPOINTS = ["summary", "users", "recharges", "payments", "products"]


def staff_client(staff) -> APIClient:
    client = APIClient()
    client.credentials(**bearer(staff))
    return client


@pytest.fixture
def mx_product():
    return ProductFactory(retail_price=Decimal("5.00"))


@pytest.fixture
def co_product():
    colombia = CountryFactory(code="CO", name="Colombia", calling_code="+57", currency="COP")
    return ProductFactory(operator=OperatorFactory(country=colombia), retail_price=Decimal("10.00"))


@pytest.fixture
def shop():
    user = UserFactory()
    account_set_b2b(account=user.account, is_b2b=True)
    fund(user, "200.00")
    return user


# -- permissions ----------------------------------------------------------------------------------


@pytest.mark.parametrize("endpoint", ENDPOINTS)
def test_admin_endpoints_refuse_anonymous_callers_with_401(api, endpoint):
    assert_problem(api.get(BASE + endpoint), 401, "not_authenticated")


@pytest.mark.parametrize("endpoint", ENDPOINTS)
def test_admin_endpoints_refuse_ordinary_users_with_403(user_api, endpoint):
    assert_problem(user_api.get(BASE + endpoint), 403, "permission_denied")


@pytest.mark.parametrize("endpoint", ENDPOINTS)
def test_admin_endpoints_refuse_a_b2b_key_with_403(shop, endpoint):
    _key, plaintext = make_key(shop, mode="live")
    client = APIClient()
    client.credentials(HTTP_X_API_KEY=plaintext)
    assert_problem(client.get(BASE + endpoint), 403, "permission_denied")


@pytest.mark.parametrize("endpoint", ENDPOINTS)
def test_admin_endpoints_answer_a_staff_users_api_key(staff, endpoint):
    _key, plaintext = make_key(staff, mode="live")
    client = APIClient()
    client.credentials(HTTP_X_API_KEY=plaintext)
    response = client.get(BASE + endpoint)
    assert response.status_code == 200, response.content


@pytest.mark.parametrize("endpoint", ENDPOINTS)
def test_admin_endpoints_answer_a_staff_jwt(staff, endpoint):
    response = staff_client(staff).get(BASE + endpoint)
    assert response.status_code == 200, response.content


def test_admin_endpoints_answer_a_staff_session(staff):
    client = APIClient()
    second_factor_login(client, staff)
    assert client.get(BASE + "summary").status_code == 200


def test_a_revoked_staff_key_is_refused(staff):
    from accounts.services import api_key_revoke

    key, plaintext = make_key(staff, mode="live")
    api_key_revoke(key=key, by=staff)
    client = APIClient()
    client.credentials(HTTP_X_API_KEY=plaintext)
    assert_problem(client.get(BASE + "summary"), 401, "api_key_revoked")


# -- lists ----------------------------------------------------------------------------------------


def test_recharges_list_uses_the_envelope_and_pages(staff, shop, mx_product):
    place(shop, mx_product, quantity=5)
    client = staff_client(staff)
    body = client.get(BASE + "recharges?limit=2").json()
    assert set(body) == {"results", "count", "page", "limit", "next", "previous"}
    assert body["count"] == 5 and body["limit"] == 2 and body["page"] == 1
    assert len(body["results"]) == 2 and body["previous"] is None
    assert "page=2" in body["next"]
    last = client.get(BASE + "recharges?limit=2&page=3").json()
    assert len(last["results"]) == 1 and last["next"] is None
    row = body["results"][0]
    assert row["id"].startswith("rch_") and row["orderId"].startswith("ord_")
    assert row["account"] == {"id": shop.account.public_id, "name": shop.account.name}
    assert row["operator"]["id"] == mx_product.operator.public_id
    assert row["country"] == "MX" and row["amount"] == "5.00" and row["currency"] == "EUR"
    assert row["status"] == "queued" and row["livemode"] is True and row["failureCode"] is None
    # What the recipient gets, as every recharge shows it (contract section 17).
    assert row["localAmount"] == f"{mx_product.local_amount:.2f}"
    assert row["localCurrency"] == mx_product.local_currency


@pytest.mark.parametrize("endpoint", ["users", "recharges", "payments", "products"])
@pytest.mark.parametrize(
    ("query", "field"), [("limit=0", "limit"), ("limit=101", "limit"), ("page=x", "page")]
)
def test_bad_page_or_limit_is_a_400_naming_the_field(staff, endpoint, query, field):
    body = assert_problem(
        staff_client(staff).get(f"{BASE}{endpoint}?{query}"), 400, "validation_error"
    )
    assert [e["field"] for e in body["errors"]] == [field]


@pytest.mark.parametrize(
    ("endpoint", "query", "field"),
    [
        ("recharges", "status=lost", "status"),
        ("recharges", "mode=prod", "mode"),
        ("recharges", "createdFrom=yesterday", "createdFrom"),
        ("recharges", "createdFrom=2026-11-20&createdTo=2026-11-01", "createdTo"),
        ("recharges", "country=Mexico", "country"),
        ("recharges", "colour=red", "colour"),
        ("payments", "method=cash", "method"),
        ("payments", "status=captured,paid", "status"),
        ("users", "isB2b=maybe", "isB2b"),
        ("products", "active=perhaps", "active"),
    ],
)
def test_bad_filters_are_a_400_naming_the_field(staff, endpoint, query, field):
    body = assert_problem(
        staff_client(staff).get(f"{BASE}{endpoint}?{query}"), 400, "validation_error"
    )
    assert [e["field"] for e in body["errors"]] == [field]


def test_recharges_filter_by_status_account_operator_country_mode_and_dates(
    staff, shop, mx_product, co_product
):
    other = UserFactory()
    fund(other, "100.00")
    process(place(shop, mx_product, quantity=2))  # delivered
    process(place(shop, mx_product, number=REJECTS))  # failed
    place(other, co_product, number="+573001234567")  # queued, Colombia
    sandbox_order(shop, mx_product, quantity=3)  # test mode
    client = staff_client(staff)

    def ids(query):
        body = client.get(f"{BASE}recharges?{query}").json()
        return body["count"], {r["status"] for r in body["results"]}

    assert ids("")[0] == 7
    assert ids("status=failed") == (1, {"failed"})
    assert ids("status=failed,delivered") == (3, {"failed", "delivered"})
    assert ids("status=failed&status=delivered") == (3, {"failed", "delivered"})
    assert ids(f"recipientNumber=%2B{REJECTS[1:]}") == (1, {"failed"})
    assert ids(f"account={other.account.public_id}") == (1, {"queued"})
    assert ids(f"operator={co_product.operator.public_id}")[0] == 1
    assert ids("country=co")[0] == 1
    assert ids("mode=test")[0] == 3  # whatever the sandbox made of them
    assert ids("mode=live")[0] == 4
    today = timezone.localdate()
    assert ids(f"createdFrom={today}&createdTo={today}")[0] == 7
    assert ids(f"createdTo={today - timedelta(days=1)}")[0] == 0
    future = (timezone.now() + timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
    assert ids(f"createdFrom={future}")[0] == 0
    assert_ledger_balanced()


def test_payments_list_filters_and_shows_refunds(staff, shop, mx_product):
    process(place(shop, mx_product, quantity=2))
    process(place(shop, mx_product, number=REJECTS))
    sandbox_order(shop, mx_product)
    client = staff_client(staff)
    body = client.get(BASE + "payments?mode=live").json()
    assert body["count"] == 2
    refunded = client.get(BASE + "payments?status=refunded").json()["results"]
    assert len(refunded) == 1
    row = refunded[0]
    assert row["amount"] == "5.00" and row["refundedAmount"] == "5.00"
    assert row["method"] == "wallet" and row["channel"] == "wallet" and row["rechargeCount"] == 1
    assert client.get(BASE + "payments?method=card").json()["count"] == 0
    assert client.get(BASE + "payments?currency=usd").json()["count"] == 0
    assert client.get(BASE + "payments?mode=test").json()["count"] == 1


def test_users_list_shows_account_wallet_and_keys_and_filters(staff, shop):
    make_key(shop, mode="live")
    client = staff_client(staff)
    body = client.get(BASE + "users?isB2b=true").json()
    assert body["count"] == 1
    row = body["results"][0]
    assert row["email"] == shop.email and row["account"]["isB2b"] is True
    assert row["wallet"] == {"currency": "EUR", "amount": "200.00"}
    assert row["activeKeys"] == 1
    assert client.get(BASE + "users?isStaff=true").json()["results"][0]["email"] == staff.email
    assert client.get(f"{BASE}users?q={shop.email[:6]}").json()["count"] >= 1


def test_products_list_includes_inactive_products_and_filters(staff, mx_product, co_product):
    ProductFactory(operator=mx_product.operator, active=False)
    client = staff_client(staff)
    assert client.get(BASE + "products").json()["count"] == 3
    assert client.get(BASE + "products?active=false").json()["count"] == 1
    assert client.get(BASE + "products?country=CO").json()["count"] == 1
    row = client.get(f"{BASE}products?q={co_product.sku}").json()["results"][0]
    assert row["id"] == co_product.public_id and row["price"] == "10.00"
    assert row["operator"]["id"] == co_product.operator.public_id
    assert row["rechargesLast30Days"] == 0


@pytest.mark.parametrize("endpoint", ["users", "recharges", "payments", "products"])
def test_lists_use_a_constant_number_of_queries(
    staff, shop, mx_product, co_product, endpoint, django_assert_max_num_queries
):
    place(shop, mx_product)
    client = staff_client(staff)
    client.get(BASE + endpoint)  # warm up: authentication caches
    with django_assert_max_num_queries(12) as few:
        client.get(BASE + endpoint)
    for n in range(4):
        other = UserFactory()
        fund(other, "50.00")
        place(
            other,
            mx_product if n % 2 else co_product,
            number=DELIVERS if n % 2 else "+573001234567",
            quantity=2,
        )
        ProductFactory(operator=mx_product.operator)
    with django_assert_max_num_queries(len(few.captured_queries)):
        response = client.get(BASE + endpoint)
    assert response.json()["count"] > 1


# -- summary --------------------------------------------------------------------------------------


def test_summary_figures_match_a_known_fixture(staff, shop, mx_product, co_product):
    make_key(shop, mode="live")
    revoked, _ = make_key(shop, mode="test", name="old")
    from accounts.services import api_key_revoke

    api_key_revoke(key=revoked, by=staff)
    process(place(shop, mx_product, quantity=3))  # 15.00, 3 delivered
    process(place(shop, co_product, number="+573001239990"))  # 10.00, failed and refunded
    place(shop, mx_product)  # 5.00 queued
    sandbox_order(shop, mx_product, quantity=2)  # test mode: not in the figures
    # An order of 40 days ago counts in no window.
    old = place(shop, mx_product)
    past = timezone.now() - timedelta(days=40)
    Order.objects.filter(pk=old.pk).update(created_at=past)
    Payment.objects.filter(order=old).update(created_at=past)
    Recharge.objects.filter(order=old).update(created_at=past)
    topup_request(account=shop.account, amount=Decimal("75.00"), method=TopUp.Method.BANK_TRANSFER)
    topup_request(account=shop.account, amount=Decimal("25.00"), method=TopUp.Method.BANK_TRANSFER)

    body = staff_client(staff).get(BASE + "summary").json()

    assert body["users"] == {"total": 2, "active": 2, "staff": 1, "newLast30Days": 2}
    assert body["accounts"] == {"total": 2, "b2b": 1}
    # make_key: live + the sandbox order's test key; the revoked one does not count.
    assert body["apiKeys"] == {"active": 2, "live": 1, "test": 1}
    for window in ("today", "last7Days", "last30Days"):
        payments = body["payments"][window]
        assert payments["count"] == 3
        assert payments["totals"] == [{"currency": "EUR", "amount": "30.00"}]
        assert payments["refunded"] == [{"currency": "EUR", "amount": "10.00"}]
        recharges = body["recharges"][window]
        assert recharges["count"] == 5
        assert recharges["totals"] == [{"currency": "EUR", "amount": "30.00"}]
    assert body["rechargesByStatus"] == {
        "queued": 1,
        "waitlisted": 0,
        "dispatched": 0,
        "delivered": 3,
        "failed": 1,
    }
    assert body["successRate"] == 0.75
    # 200 funded - 30 - 5 (old) + 10 refund = 175.00
    assert body["walletFloat"] == [{"currency": "EUR", "amount": "175.00"}]
    assert body["pendingBankTopups"] == {
        "count": 2,
        "totals": [{"currency": "EUR", "amount": "100.00"}],
    }
    assert Wallet.objects.get(account=shop.account, kind="live").balance == Decimal("175.00")
    assert_ledger_balanced()


def test_summary_with_no_data_has_zeros_and_no_success_rate(staff):
    body = staff_client(staff).get(BASE + "summary").json()
    assert body["successRate"] is None
    assert body["payments"]["today"] == {"count": 0, "totals": [], "refunded": []}
    assert body["walletFloat"] == [] and body["pendingBankTopups"]["count"] == 0


def test_admin_endpoints_are_in_the_openapi_schema(staff):
    schema = staff_client(staff).get("/api/v1/schema/?format=json").json()
    for endpoint in ENDPOINTS:
        assert f"/api/v1/admin/{endpoint}" in schema["paths"]
    params = {p["name"] for p in schema["paths"]["/api/v1/admin/recharges"]["get"]["parameters"]}
    assert {
        "page",
        "limit",
        "status",
        "account",
        "operator",
        "country",
        "createdFrom",
        "createdTo",
        "mode",
    } <= params
