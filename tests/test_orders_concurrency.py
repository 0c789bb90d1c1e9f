"""Money under concurrency: real threads against PostgreSQL, ledger checked afterwards."""

import threading
from decimal import Decimal

import pytest
from django.db import connection
from rest_framework.test import APIClient

from accounts.services import account_set_b2b
from orders.idempotency import lock_id
from orders.models import IdempotencyRecord, Order
from recharges.models import Recharge
from tests.factories import ProductFactory, UserFactory, make_key
from tests.helpers import assert_ledger_balanced, assert_problem, other_session
from wallet.models import LedgerEntry, Wallet
from wallet.services import wallet_topup_manual

B2B = "/api/v1/api-access/b2b/recharges"
NUMBER = "+525512345678"


def b2b_user(amount: str):
    user = UserFactory()
    account_set_b2b(account=user.account, is_b2b=True)
    wallet_topup_manual(account=user.account, amount=Decimal(amount))
    _key, plaintext = make_key(user, mode="live")
    return user, plaintext


def body(product, quantity=1):
    return {
        "items": [
            {"productId": product.public_id, "recipientNumber": NUMBER, "quantity": quantity}
        ],
        "baseCurrency": "EUR",
    }


def run_concurrently(count: int, call) -> list:
    results: list = [None] * count
    barrier = threading.Barrier(count)

    def worker(n):
        try:
            barrier.wait()
            results[n] = call(n)
        finally:
            connection.close()

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    return results


@pytest.mark.django_db(transaction=True)
def test_concurrent_orders_on_a_wallet_that_affords_k_of_n_exactly_k_succeed():
    product = ProductFactory(retail_price=Decimal("5.00"))
    user, key = b2b_user("15.00")  # affords 3 of 10

    def place(n):
        client = APIClient()
        client.credentials(HTTP_X_API_KEY=key)
        return client.post(B2B, body(product), HTTP_IDEMPOTENCY_KEY=f"race-{n}").status_code

    statuses = run_concurrently(10, place)
    assert sorted(statuses) == [201] * 3 + [402] * 7
    wallet = Wallet.objects.get(account=user.account, kind="live")
    assert wallet.balance == Decimal("0.00")
    assert Order.objects.count() == 3 and Recharge.objects.count() == 3
    assert LedgerEntry.objects.filter(wallet=wallet, kind="payment").count() == 3
    assert_ledger_balanced()


@pytest.mark.django_db(transaction=True)
def test_concurrent_requests_with_one_idempotency_key_make_one_order_and_one_debit():
    product = ProductFactory(retail_price=Decimal("5.00"))
    user, key = b2b_user("100.00")

    def place(n):
        client = APIClient()
        client.credentials(HTTP_X_API_KEY=key)
        response = client.post(B2B, body(product, 2), HTTP_IDEMPOTENCY_KEY="same-key")
        return response.status_code, response.get("Idempotent-Replayed"), response.json()

    results = run_concurrently(8, place)
    created = [r for r in results if r[0] == 201]
    assert {r[0] for r in results} <= {201, 409}
    assert len([r for r in created if r[1] is None]) == 1  # exactly one original
    order_ids = {r[2]["id"] for r in created}
    assert len(order_ids) == 1  # replays return the same order
    for status, _replayed, problem in results:
        if status == 409:
            assert problem["code"] == "idempotency_key_in_use"
    wallet = Wallet.objects.get(account=user.account, kind="live")
    assert wallet.balance == Decimal("90.00")
    assert Order.objects.count() == 1
    assert LedgerEntry.objects.filter(kind="payment").count() == 1
    assert_ledger_balanced()


@pytest.mark.django_db
def test_idempotent_replay_returns_the_stored_answer_with_the_replayed_header():
    product = ProductFactory(retail_price=Decimal("5.00"))
    user, key = b2b_user("100.00")
    client = APIClient()
    client.credentials(HTTP_X_API_KEY=key)
    first = client.post(B2B, body(product), HTTP_IDEMPOTENCY_KEY="k1")
    again = client.post(B2B, body(product), HTTP_IDEMPOTENCY_KEY="k1")
    assert first.status_code == again.status_code == 201
    assert again["Idempotent-Replayed"] == "true"
    assert "Idempotent-Replayed" not in first
    assert again.json() == first.json()
    assert Order.objects.count() == 1
    assert Wallet.objects.get(account=user.account).balance == Decimal("95.00")
    assert_ledger_balanced()


@pytest.mark.django_db
def test_same_idempotency_key_with_a_different_body_is_422():
    product = ProductFactory(retail_price=Decimal("5.00"))
    _user, key = b2b_user("100.00")
    client = APIClient()
    client.credentials(HTTP_X_API_KEY=key)
    client.post(B2B, body(product, 1), HTTP_IDEMPOTENCY_KEY="k2")
    assert_problem(
        client.post(B2B, body(product, 2), HTTP_IDEMPOTENCY_KEY="k2"), 422, "idempotency_key_reused"
    )
    assert Order.objects.count() == 1


@pytest.mark.django_db
def test_replay_while_the_first_request_still_runs_is_409():
    product = ProductFactory(retail_price=Decimal("5.00"))
    user, key = b2b_user("100.00")
    client = APIClient()
    client.credentials(HTTP_X_API_KEY=key)
    # What a running first request holds: the key's lock, in its own database session.
    with other_session() as first:
        first.execute(
            "SELECT pg_advisory_lock(%s)",
            [lock_id(account_id=user.account.pk, livemode=True, key="running")],
        )
        assert_problem(
            client.post(B2B, body(product), HTTP_IDEMPOTENCY_KEY="running"),
            409,
            "idempotency_key_in_use",
        )
    assert Order.objects.count() == 0
    assert IdempotencyRecord.objects.count() == 0
    # Once the first request is over, the key runs.
    assert client.post(B2B, body(product), HTTP_IDEMPOTENCY_KEY="running").status_code == 201


@pytest.mark.django_db
def test_a_402_is_stored_and_replayed_as_402():
    product = ProductFactory(retail_price=Decimal("5.00"))
    user, key = b2b_user("1.00")
    client = APIClient()
    client.credentials(HTTP_X_API_KEY=key)
    first = client.post(B2B, body(product), HTTP_IDEMPOTENCY_KEY="poor")
    wallet_topup_manual(account=user.account, amount=Decimal("100.00"))
    again = client.post(B2B, body(product), HTTP_IDEMPOTENCY_KEY="poor")
    assert first.status_code == again.status_code == 402
    assert again["Idempotent-Replayed"] == "true"
    assert again["Content-Type"].startswith("application/problem+json")
    assert Order.objects.count() == 0


@pytest.mark.django_db
def test_the_same_idempotency_key_under_two_accounts_makes_two_orders():
    product = ProductFactory(retail_price=Decimal("5.00"))
    first_user, first_key = b2b_user("10.00")
    second_user, second_key = b2b_user("10.00")
    for key in (first_key, second_key):
        client = APIClient()
        client.credentials(HTTP_X_API_KEY=key)
        assert client.post(B2B, body(product), HTTP_IDEMPOTENCY_KEY="shared").status_code == 201
    assert Order.objects.count() == 2
    for user in (first_user, second_user):
        assert Wallet.objects.get(account=user.account).balance == Decimal("5.00")
    assert_ledger_balanced()


@pytest.mark.django_db
def test_a_key_refused_before_it_started_stores_nothing():
    product = ProductFactory(retail_price=Decimal("5.00"))
    user = UserFactory()  # not B2B: refused with 403 before anything runs
    _key, plaintext = make_key(user, mode="live")
    client = APIClient()
    client.credentials(HTTP_X_API_KEY=plaintext)
    assert client.post(B2B, body(product), HTTP_IDEMPOTENCY_KEY="x").status_code == 403
    assert IdempotencyRecord.objects.count() == 0


@pytest.mark.django_db
def test_an_expired_idempotency_key_can_be_used_again(time_machine):
    product = ProductFactory(retail_price=Decimal("5.00"))
    _user, key = b2b_user("100.00")
    client = APIClient()
    client.credentials(HTTP_X_API_KEY=key)
    time_machine.move_to("2026-11-20 10:00:00Z", tick=False)
    client.post(B2B, body(product), HTTP_IDEMPOTENCY_KEY="day")
    time_machine.move_to("2026-11-21 10:01:00Z", tick=False)
    again = client.post(B2B, body(product), HTTP_IDEMPOTENCY_KEY="day")
    assert again.status_code == 201 and "Idempotent-Replayed" not in again
    assert Order.objects.count() == 2


@pytest.mark.django_db(transaction=True)
def test_concurrent_site_wallet_checkouts_of_one_cart_pay_it_once_and_land_on_its_receipt():
    """A double click or a retried request: four POST /checkout/wallet/ with one session."""
    from django.test import Client

    from orders.models import CartItem
    from payments.models import Payment

    product = ProductFactory(retail_price=Decimal("5.00"))
    user = UserFactory()
    wallet_topup_manual(account=user.account, amount=Decimal("100.00"))
    first = Client()
    first.force_login(user)
    first.post(
        "/cart/add/",
        {"product": product.public_id, "recipient_number": NUMBER, "quantity": "2"},
    )
    session = first.cookies["sessionid"].value

    def checkout(_n):
        client = Client()
        client.cookies["sessionid"] = session
        return client.post("/checkout/wallet/")

    responses = run_concurrently(4, checkout)
    payment = Payment.objects.get()  # exactly one
    assert {r.status_code for r in responses} == {302}
    assert {r["Location"] for r in responses} == {f"/payments/{payment.public_id}/"}
    assert Recharge.objects.count() == 2 and CartItem.objects.count() == 0
    wallet = Wallet.objects.get(account=user.account, kind="live")
    assert wallet.balance == Decimal("90.00")
    assert LedgerEntry.objects.filter(wallet=wallet, kind="payment").count() == 1
    assert_ledger_balanced()


@pytest.mark.django_db
def test_a_b2b_recharge_reads_its_wallet_once_under_the_lock_and_writes_its_key_once():
    """The cheaper B2B path (docs/performance.md): one read of the wallet, locked, and the
    Idempotency-Key's answer inserted once, in the order's transaction."""
    from django.test.utils import CaptureQueriesContext

    product = ProductFactory(retail_price=Decimal("5.00"))
    _user, key = b2b_user("100.00")
    client = APIClient()
    client.credentials(HTTP_X_API_KEY=key)
    with CaptureQueriesContext(connection) as captured:
        response = client.post(B2B, body(product), HTTP_IDEMPOTENCY_KEY="once")
    assert response.status_code == 201, response.content
    statements = [query["sql"] for query in captured.captured_queries]
    wallet_reads = [
        sql for sql in statements if sql.startswith("SELECT") and 'FROM "wallet_wallet"' in sql
    ]
    assert len(wallet_reads) == 1 and "FOR UPDATE" in wallet_reads[0], wallet_reads
    key_writes = [
        sql
        for sql in statements
        if "orders_idempotencyrecord" in sql and not sql.lstrip("( ").startswith("SELECT")
    ]
    assert len(key_writes) == 1 and key_writes[0].startswith("INSERT"), key_writes
