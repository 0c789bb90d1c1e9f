"""After the 201: a recharge or a payment by id, and the search (docs/contract.md §11)."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal
from importlib import import_module

import pytest
from django.apps import apps as django_apps
from django.utils import timezone

from accounts.services import account_set_b2b
from orders.idempotency import RETENTION, purge_expired
from orders.models import IdempotencyRecord, Order
from recharges.models import Recharge
from recharges.processor import recharge_process
from tests.factories import UserFactory, make_key
from tests.helpers import assert_problem, bearer, client_for
from wallet.services import wallet_topup_manual

pytestmark = pytest.mark.django_db

B2B = "/api/v1/api-access/b2b/recharges"
DELIVERS = "+525512345678"
REJECTS = "+525512349990"


def _shop(mode: str = "live"):
    user = UserFactory()
    account_set_b2b(account=user.account, is_b2b=True)
    wallet_topup_manual(account=user.account, amount=Decimal("200.00"))
    _key, plaintext = make_key(user, mode=mode)
    return user, client_for(plaintext)


def _place(client, product, number=DELIVERS, quantity=1, key="k1"):
    body = {
        "items": [
            {"productId": product.public_id, "recipientNumber": number, "quantity": quantity}
        ],
        "baseCurrency": "EUR",
    }
    response = client.post(B2B, body, format="json", HTTP_IDEMPOTENCY_KEY=key)
    assert response.status_code == 201, response.content
    return response.json()


def test_a_delivered_recharge_shows_its_order_payment_operator_reference_and_history(product):
    _user, shop = _shop()
    order = _place(shop, product)
    rid = order["recharges"][0]["id"]
    recharge_process(recharge_id=Recharge.objects.get(public_id=rid).pk)
    body = shop.get(f"{B2B}/{rid}").json()
    assert body["id"] == rid and body["status"] == "delivered"
    assert body["orderId"] == order["id"] and body["paymentId"] == order["payment"]["id"]
    assert body["operatorReference"]
    assert body["deliveredAmount"] == f"{product.local_amount:.2f}"
    assert body["deliveredCurrency"] == product.local_currency
    assert [e["status"] for e in body["events"]] == ["queued", "dispatched", "delivered"]
    assert body["events"][0]["previousStatus"] is None and body["livemode"] is True


def test_a_queued_recharge_has_no_operator_reference_nor_delivered_amount(product):
    _user, shop = _shop()
    rid = _place(shop, product)["recharges"][0]["id"]
    Recharge.objects.filter(public_id=rid).update(status="queued")
    body = shop.get(f"{B2B}/{rid}").json()
    assert body["operatorReference"] is None and body["deliveredAmount"] is None


def test_another_accounts_or_the_other_modes_recharge_is_404(product):
    _user, shop = _shop()
    rid = _place(shop, product)["recharges"][0]["id"]
    _other, stranger = _shop()
    assert_problem(stranger.get(f"{B2B}/{rid}"), 404, "not_found")
    owner = Recharge.objects.get(public_id=rid).account
    _key, test_plain = make_key(owner.users.first(), mode="test")
    assert_problem(client_for(test_plain).get(f"{B2B}/{rid}"), 404, "not_found")


def test_a_web_session_looks_up_its_own_recharges_and_payments(product, api):
    user, shop = _shop()
    order = _place(shop, product)
    api.credentials(**bearer(user))
    assert api.get(f"{B2B}/{order['recharges'][0]['id']}").status_code == 200
    payment = api.get(f"/api/v1/payments/{order['payment']['id']}").json()
    assert payment["id"] == order["payment"]["id"]
    assert [r["id"] for r in payment["recharges"]] == [r["id"] for r in order["recharges"]]


def test_a_payment_of_another_account_is_404(product):
    _user, shop = _shop()
    payment_id = _place(shop, product)["payment"]["id"]
    _other, stranger = _shop()
    assert_problem(stranger.get(f"/api/v1/payments/{payment_id}"), 404, "not_found")


def test_the_search_filters_by_status_number_order_key_and_time(product):
    _user, shop = _shop()
    first = _place(shop, product, quantity=2, key="first")
    second = _place(shop, product, number=REJECTS, key="second")
    for recharge in Recharge.objects.all():
        recharge_process(recharge_id=recharge.pk)

    def ids(query: str = "") -> set[str]:
        response = shop.get(f"{B2B}?{query}")
        assert response.status_code == 200, response.content
        return {r["id"] for r in response.json()["results"]}

    firsts = {r["id"] for r in first["recharges"]}
    seconds = {r["id"] for r in second["recharges"]}
    assert ids() == firsts | seconds
    assert ids("status=delivered") == firsts
    assert (
        ids("status=failed,delivered") == ids("status=failed&status=delivered") == firsts | seconds
    )
    assert ids(f"recipientNumber=%2B{REJECTS[1:]}") == seconds
    assert ids(f"orderId={first['id']}") == firsts
    assert ids("idempotencyKey=second") == seconds
    assert ids("idempotencyKey=never-used") == set()
    later = (timezone.now() + timedelta(minutes=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
    assert ids(f"createdAfter={later}") == set()
    assert ids(f"createdBefore={later}") == firsts | seconds
    page = shop.get(f"{B2B}?limit=1").json()
    assert page["count"] == 3 and len(page["results"]) == 1 and page["next"]
    newest = max(Recharge.objects.values_list("id", flat=True))
    assert page["results"][0]["id"] == Recharge.objects.get(id=newest).public_id


def test_the_search_by_idempotency_key_finds_the_recharges_of_a_batch_placed_with_it(product):
    _user, shop = _shop()
    body = {
        "items": [{"productId": product.public_id, "recipientNumber": DELIVERS, "quantity": 2}],
        "baseCurrency": "EUR",
    }
    response = shop.post(
        "/api/v1/api-access/b2b/batches", body, format="json", HTTP_IDEMPOTENCY_KEY="payroll"
    )
    assert response.status_code == 202, response.content
    batch = response.json()
    response = shop.get(f"{B2B}?idempotencyKey=payroll")
    assert response.status_code == 200, response.content
    found = response.json()["results"]
    assert len(found) == 2
    assert {r["orderId"] for r in found} == {batch["orderId"]}


def test_the_search_by_idempotency_key_outlives_the_keys_stored_answer(product):
    """A key's stored answer is purged after 24 hours (the key may then place a new order),
    but the order keeps the key it was placed with: the search still finds its recharges."""
    _user, shop = _shop()
    placed = _place(shop, product, quantity=2, key="monday-payroll")
    IdempotencyRecord.objects.update(created_at=timezone.now() - RETENTION - timedelta(hours=1))
    assert purge_expired() == 1
    response = shop.get(f"{B2B}?idempotencyKey=monday-payroll")
    assert response.status_code == 200, response.content
    assert {r["id"] for r in response.json()["results"]} == {r["id"] for r in placed["recharges"]}


def test_the_migration_gives_the_orders_of_the_last_day_their_keys(product):
    """Orders placed before the key was kept on them get it from its stored answer: an
    order's 201 (``id``) and a batch's 202 (``orderId``)."""
    _user, shop = _shop()
    single = _place(shop, product, key="tuesday")
    batch = shop.post(
        "/api/v1/api-access/b2b/batches",
        {
            "items": [{"productId": product.public_id, "recipientNumber": DELIVERS, "quantity": 1}],
            "baseCurrency": "EUR",
        },
        format="json",
        HTTP_IDEMPOTENCY_KEY="wednesday",
    ).json()
    assert "orderId" in batch, batch
    Order.objects.update(idempotency_key="")  # as the orders were before the migration
    migration = import_module("orders.migrations.0019_order_idempotency_key")
    migration.keys_from_stored_answers(django_apps, None)
    keys = dict(Order.objects.values_list("public_id", "idempotency_key"))
    assert keys == {single["id"]: "tuesday", batch["orderId"]: "wednesday"}


def test_the_search_refuses_unknown_parameters_and_bad_values(product):
    _user, shop = _shop()
    problem = assert_problem(shop.get(f"{B2B}?colour=red"), 400, "validation_error")
    assert problem["errors"][0]["field"] == "colour"
    assert_problem(shop.get(f"{B2B}?status=lost"), 400, "validation_error")
    assert_problem(shop.get(f"{B2B}?createdAfter=yesterday"), 400, "validation_error")


def test_the_search_sees_only_the_keys_mode(product):
    user, shop = _shop()
    _place(shop, product)
    _key, test_plain = make_key(user, mode="test")
    assert client_for(test_plain).get(B2B).json()["count"] == 0


def test_the_search_keeps_its_query_count_with_10000_recharges(
    product, django_assert_max_num_queries
):
    _user, shop = _shop()
    order = _place(shop, product)
    template = Recharge.objects.get(public_id=order["recharges"][0]["id"])
    Recharge.objects.bulk_create(
        [
            Recharge(
                order_id=template.order_id,
                payment_id=template.payment_id,
                account_id=template.account_id,
                product_id=template.product_id,
                recipient_number=DELIVERS,
                amount=template.amount,
                currency="EUR",
                public_id=f"rch_bulk{n:06d}",
            )
            for n in range(10_000)
        ],
        batch_size=2000,
    )
    shop.get(B2B)  # warm up authentication caches
    with django_assert_max_num_queries(12):
        body = shop.get(f"{B2B}?limit=100").json()
    assert body["count"] == 10_001 and len(body["results"]) == 100


def test_the_schema_lists_recharge_statuses_as_an_enum(api):
    schema = api.get("/api/v1/schema/?format=json").json()
    status = schema["components"]["schemas"]["RechargeDetailOut"]["properties"]["status"]
    ref = status.get("$ref") or status["allOf"][0]["$ref"]
    enum = schema["components"]["schemas"][ref.rsplit("/", 1)[-1]]["enum"]
    assert {"queued", "dispatched", "delivered", "failed", "waitlisted"} <= set(enum)


@pytest.mark.parametrize(
    "filters, index",
    [
        ({}, "recharge_recent"),
        ({"recipientNumber": "+525512345678"}, "recharge_by_number"),
        ({"status": "failed"}, "recharge_by_status"),
    ],
)
def test_the_list_reads_an_index_in_order_not_the_table(db, filters, index):
    """EXPLAIN of the list's query, filtered as the API filters it: an index scan in the
    answer's order (newest first), no sort of the account's rows, whatever their number.
    Sequential and bitmap scans are switched off so the planner shows the index it would use
    on a large table rather than its small-table shortcuts (an empty table makes a bitmap
    scan and a sort look cheap)."""
    from django.db import connection, transaction
    from django.http import QueryDict
    from django.utils import timezone

    from orders.filters import RechargeFilter
    from orders.selectors import recharge_search

    user = UserFactory()
    data = QueryDict(mutable=True)
    data.update(filters)
    search = RechargeFilter(
        data,
        queryset=recharge_search(account=user.account, livemode=True),
        account=user.account,
        livemode=True,
        now=timezone.now(),
    )
    assert search.is_valid(), search.errors
    query = search.qs[:50]
    sql, params = query.query.sql_with_params()
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SET LOCAL enable_seqscan = off")
        cursor.execute("SET LOCAL enable_bitmapscan = off")
        cursor.execute(f"EXPLAIN {sql}", params)
        plan = "\n".join(row[0] for row in cursor.fetchall())
    assert index in plan, plan
    assert "Sort" not in plan, plan
    assert "Seq Scan on orders_recharge" not in plan, plan
