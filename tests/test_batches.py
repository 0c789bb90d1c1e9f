"""Batches (docs/contract.md §13, issue 18): up to 10,000 lines, every line checked before
anything is charged, one order and one debit, idempotent, never overspending under
concurrency; counts and progress while running, ``completed`` and ``batch.completed`` once
every recharge is final; the results as CSV."""

from __future__ import annotations

import csv
import io
import json
import threading
from decimal import Decimal

import pytest
from django.db import connection
from rest_framework.test import APIClient

from accounts.services import account_set_b2b
from orders.batches import batches_complete
from orders.models import Batch, Order
from recharges.models import Recharge
from tests.factories import ProductFactory, UserFactory, make_key
from tests.helpers import REJECTS, assert_ledger_balanced, fund, process
from wallet.models import LedgerEntry, Wallet
from webhooks.models import Event
from webhooks.services import endpoint_create

pytestmark = pytest.mark.django_db

BATCHES = "/api/v1/api-access/b2b/batches"
NUMBER = "+525512345678"


def b2b(amount: str = "1000.00", mode: str = "live"):
    user = UserFactory()
    account_set_b2b(account=user.account, is_b2b=True)
    fund(user, amount)
    _key, plaintext = make_key(user, mode=mode)
    client = APIClient()
    client.credentials(HTTP_X_API_KEY=plaintext)
    return user, client


def line(product, number=NUMBER, quantity=1, reference=None):
    item = {"productId": product.public_id, "recipientNumber": number, "quantity": quantity}
    if reference is not None:
        item["reference"] = reference
    return item


def send(client, items, key="batch-1"):
    return client.post(
        BATCHES, {"items": items, "baseCurrency": "EUR"}, format="json", HTTP_IDEMPOTENCY_KEY=key
    )


def balance(user) -> Decimal:
    return Wallet.objects.get(account=user.account, kind="live").balance


@pytest.fixture
def product():
    return ProductFactory(retail_price=Decimal("1.00"))


def test_a_batch_is_one_order_and_one_debit_then_runs_to_completed(product):
    user, client = b2b("100.00")
    endpoint = endpoint_create(
        account=user.account, url="https://93.184.216.34/h", livemode=True, events=[]
    )
    items = [line(product, reference=f"pay-{n}") for n in range(30)]
    items.append(line(product, quantity=3, reference="bonus"))
    response = send(client, items)
    assert response.status_code == 202, response.content
    body = response.json()
    assert body["id"].startswith("bat_") and body["status"] == "running"
    assert body["orderId"].startswith("ord_") and body["livemode"] is True
    assert body["total"] == "33.00" and body["currency"] == "EUR"
    assert body["recharges"] == 33 and body["counts"] == {"queued": 33}
    assert balance(user) == Decimal("67.00")
    wallet = Wallet.objects.get(account=user.account, kind="live")
    assert LedgerEntry.objects.filter(wallet=wallet, kind="payment").count() == 1  # one debit
    assert Recharge.objects.filter(reference="bonus").count() == 3
    assert batches_complete() == 0  # still running

    process(Order.objects.get(public_id=body["orderId"]))
    # Every recharge final, before the periodic task marks it: completed, and since when.
    seen = client.get(f"{BATCHES}/{body['id']}").json()
    assert seen["status"] == "completed" and seen["completedAt"] is not None
    assert batches_complete() == 1
    assert batches_complete() == 0  # once
    done = client.get(f"{BATCHES}/{body['id']}").json()
    assert done["status"] == "completed" and done["counts"] == {"delivered": 33}
    assert done["progress"] == 1.0 and done["completedAt"] == seen["completedAt"]
    (event,) = Event.objects.filter(type="batch.completed")
    assert event.account_id == endpoint.account_id
    assert json.loads(event.body)["data"]["object"]["id"] == body["id"]

    results = client.get(f"{BATCHES}/{body['id']}/results.csv")
    assert results.status_code == 200 and results["Content-Type"].startswith("text/csv")
    rows = list(csv.reader(io.StringIO(b"".join(results.streaming_content).decode())))
    assert rows[0] == [
        "reference", "recharge_id", "recipient_number", "product_id", "status", "amount",
        "currency",
    ]  # fmt: skip
    assert len(rows) == 34
    assert rows[1][:2] == ["pay-0", Recharge.objects.order_by("id").first().public_id]
    assert rows[1][2:] == [NUMBER, product.public_id, "delivered", "1.00", "EUR"]
    assert_ledger_balanced()


def test_5000_lines_with_17_bad_ones_name_exactly_those_and_charge_nothing(product):
    user, client = b2b("10000.00")
    bad = set(range(3, 5000, 300))  # 17 lines
    assert len(bad) == 17
    items = [line(product, reference=str(n)) for n in range(5000)]
    for n in bad:  # half with a number that is no number, half with an unknown product
        items[n] = line(product, number="+5255123") if n % 2 else {**items[n], "productId": "x"}
    response = send(client, items)
    assert response.status_code == 400
    problem = response.json()
    assert problem["code"] == "validation_error"
    named = {error["field"].split("]")[0] + "]" for error in problem["errors"]}
    assert named == {f"items[{n}]" for n in bad}
    assert not Order.objects.exists() and not Batch.objects.exists()
    assert balance(user) == Decimal("10000.00")

    fixed = [line(product, reference=str(n)) for n in range(5000)]
    response = send(client, fixed, key="batch-fixed")
    assert response.status_code == 202, response.content
    assert response.json()["recharges"] == 5000
    assert balance(user) == Decimal("5000.00")
    wallet = Wallet.objects.get(account=user.account, kind="live")
    assert LedgerEntry.objects.filter(wallet=wallet, kind="payment").count() == 1
    assert_ledger_balanced()


def test_a_replay_with_the_same_key_creates_nothing(product):
    user, client = b2b("100.00")
    items = [line(product) for _ in range(5)]
    first = send(client, items, key="same")
    again = send(client, items, key="same")
    assert first.status_code == again.status_code == 202
    assert again.json() == first.json() and again["Idempotent-Replayed"] == "true"
    assert Batch.objects.count() == 1 and Recharge.objects.count() == 5
    assert balance(user) == Decimal("95.00")
    other = send(client, [line(product)], key="same")
    assert other.status_code == 422  # the same key for another body
    assert_ledger_balanced()


def test_the_unit_limit_of_single_orders_does_not_apply_but_the_wallet_does(product):
    user, client = b2b("150.00")
    assert send(client, [line(product, quantity=20) for _ in range(7)]).status_code == 202
    assert Recharge.objects.count() == 140  # past the 100 units of a single request
    short = send(client, [line(product, quantity=20)], key="too-much")
    assert short.status_code == 402
    assert Recharge.objects.count() == 140 and balance(user) == Decimal("10.00")
    assert_ledger_balanced()


def test_every_bad_line_is_named_whatever_its_fault(product):
    _user, client = b2b()
    items = [line(product, quantity=21), line(product, number="+5255123"), line(product)]
    items.append({**line(product), "productId": "prd_nothing"})
    response = send(client, items)
    assert response.status_code == 400
    fields = sorted(error["field"] for error in response.json()["errors"])
    assert fields == ["items[0].quantity", "items[1].recipientNumber", "items[3].productId"]
    assert not Batch.objects.exists()


def test_lines_are_checked_like_orders(product):
    _user, client = b2b()
    assert send(client, [line(product, quantity=21)]).status_code == 400
    assert send(client, [line(product, reference="x" * 101)], key="k2").status_code == 400
    assert send(client, [], key="k3").status_code == 400
    assert client.post(BATCHES, {"items": [line(product)], "baseCurrency": "EUR"}, format="json")
    no_key = client.post(BATCHES, {"items": [line(product)], "baseCurrency": "EUR"}, format="json")
    assert no_key.status_code == 400
    assert not Batch.objects.exists()


def test_batches_are_private_to_their_account_and_mode(product):
    _user, client = b2b()
    batch_id = send(client, [line(product)]).json()["id"]
    _other, stranger = b2b()
    assert stranger.get(f"{BATCHES}/{batch_id}").status_code == 404
    assert stranger.get(f"{BATCHES}/{batch_id}/results.csv").status_code == 404
    owner = Batch.objects.get().account.users.get()
    _key, test_plaintext = make_key(owner, mode="test")
    test_client = APIClient()
    test_client.credentials(HTTP_X_API_KEY=test_plaintext)
    assert test_client.get(f"{BATCHES}/{batch_id}").status_code == 404


def test_a_consumer_key_cannot_send_batches(product):
    user = UserFactory()
    fund(user, "100.00")
    _key, plaintext = make_key(user, mode="live")
    client = APIClient()
    client.credentials(HTTP_X_API_KEY=plaintext)
    assert send(client, [line(product)]).status_code == 403


def test_a_test_key_batch_is_simulated_in_the_sandbox(product):
    user, client = b2b(mode="test")
    from sandbox.balances import sandbox_topup

    key = user.account.api_keys.get()
    sandbox_topup(key=key, amount=Decimal("50"))
    body = send(client, [line(product), line(product, number=REJECTS)]).json()
    assert body["livemode"] is False
    assert batches_complete() == 1  # sandbox outcomes are immediate
    done = client.get(f"{BATCHES}/{body['id']}").json()
    assert done["status"] == "completed" and sum(done["counts"].values()) == 2
    assert balance(user) == Decimal("1000.00")  # the live wallet is untouched


def test_results_escape_cells_a_spreadsheet_would_run(product):
    _user, client = b2b()
    batch = send(client, [line(product, reference='=HYPERLINK("http://evil")')]).json()
    content = b"".join(client.get(f"{BATCHES}/{batch['id']}/results.csv").streaming_content)
    rows = list(csv.reader(io.StringIO(content.decode())))
    assert rows[1][0] == '\'=HYPERLINK("http://evil")'


@pytest.mark.django_db(transaction=True)
def test_concurrent_batches_on_one_wallet_never_overspend(product):
    user, _client = b2b("100.00")
    _key, plaintext = make_key(user, mode="live")
    results: list = [None] * 4
    barrier = threading.Barrier(4)

    def worker(n):
        try:
            client = APIClient()
            client.credentials(HTTP_X_API_KEY=plaintext)
            barrier.wait()
            results[n] = send(client, [line(product, quantity=20)] * 2, key=f"race-{n}").status_code
        finally:
            connection.close()

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert sorted(results) == [202, 202, 402, 402]  # 40.00 each from 100.00
    assert balance(user) == Decimal("20.00")
    assert Batch.objects.count() == 2 and Recharge.objects.count() == 80
    assert_ledger_balanced()
