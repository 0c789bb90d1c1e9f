"""A sandbox ``0003`` recharge is ``processing`` for 10 s, then ``success`` (docs/contract.md
section 6), and reads never write: a client reading at 10.1 s, before any worker has moved the
row, is shown the success the settlement will write; the delayed task and the sweeper write it,
with its ``recharge.delivered`` event."""

from __future__ import annotations

import csv
import io
import json
from datetime import datetime
from decimal import Decimal

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from recharges.models import Recharge, RechargeEvent
from recharges.tasks import recharges_sweep_task, sandbox_settle_task
from sandbox.balances import sandbox_topup
from tests.factories import make_key
from tests.fakes.receiver import Receiver
from tests.helpers import client_for
from webhooks.models import Event
from webhooks.services import endpoint_create

pytestmark = pytest.mark.django_db
B2B = "/api/v1/api-access/b2b/recharges"
SLOW, FAST = "+525512340003", "+525512345678"
PLACED_AT = datetime.fromisoformat("2026-11-21T10:00:00+00:00")
READ_AT = datetime.fromisoformat("2026-11-21T10:00:10.100+00:00")
WRITES = ("INSERT", "UPDATE", "DELETE")


@pytest.fixture
def receiver(settings):
    settings.WEBHOOK_ALLOW_PRIVATE_TARGETS = True
    server = Receiver().start()
    yield server
    server.stop()


@pytest.fixture
def placed(reseller, product, time_machine, receiver):
    """A test key's order of one ``0003`` and one ordinary recharge, and a batch of the same,
    placed at 10:00:00 by a shop with a test webhook endpoint."""
    time_machine.move_to(PLACED_AT, tick=False)
    endpoint_create(account=reseller.account, url=receiver.url, livemode=False)
    key, plaintext = make_key(reseller, mode="test")
    sandbox_topup(key=key, amount="100")
    client = client_for(plaintext)
    items = [
        {"productId": product.public_id, "recipientNumber": number, "quantity": 1}
        for number in (SLOW, FAST)
    ]
    body = {"items": items, "baseCurrency": "EUR"}
    order = client.post(B2B, body, format="json", HTTP_IDEMPOTENCY_KEY="order")
    assert order.status_code == 201, order.content
    batch = client.post(
        "/api/v1/api-access/b2b/batches", body, format="json", HTTP_IDEMPOTENCY_KEY="batch"
    )
    assert batch.status_code == 202, batch.content
    slow = Recharge.objects.get(public_id=order.json()["recharges"][0]["id"])
    assert slow.status == "processing"
    return {
        "user": reseller,
        "key": key,
        "client": client,
        "order": order.json(),
        "batch": batch.json(),
        "slow": slow,
    }


def _read(client, url: str, **extra):
    """GET ``url``, failing on any statement that writes or locks."""
    with CaptureQueriesContext(connection) as queries:
        response = client.get(url, **extra)
    assert response.status_code == 200, response.content
    written = [
        q["sql"]
        for q in queries.captured_queries
        if q["sql"].lstrip().upper().startswith(WRITES) or "FOR UPDATE" in q["sql"].upper()
    ]
    assert written == [], written
    return response


def _statuses() -> list[str]:
    return list(Recharge.objects.order_by("id").values_list("status", flat=True))


def test_reads_at_10_1_seconds_show_success_and_write_nothing(placed, time_machine):
    client, slow = placed["client"], placed["slow"]
    order, batch = placed["order"], placed["batch"]
    time_machine.move_to(READ_AT, tick=False)
    before = (_statuses(), RechargeEvent.objects.count(), Event.objects.count())
    assert before[0].count("processing") == 2  # the order's and the batch's

    sandbox = _read(client, "/api/v1/api-access/sandbox").json()
    assert {r["status"] for r in sandbox["recharges"]} == {"success"}

    detail = _read(client, f"{B2B}/{slow.public_id}").json()
    assert detail["status"] == "success"
    assert detail["updatedAt"] == "2026-11-21T10:00:10Z"  # when its 10 seconds were over
    assert detail["deliveredAmount"] is not None
    assert [(e["previousStatus"], e["status"]) for e in detail["events"]][-1] == (
        "processing",
        "success",
    )
    assert detail["events"][-1]["at"] == "2026-11-21T10:00:10Z"

    listed = _read(client, B2B).json()["results"]
    assert {r["status"] for r in listed} == {"success"}
    assert next(r for r in listed if r["id"] == slow.public_id) == detail

    history = _read(client, "/api/v1/payments/history").json()["results"]
    assert {r["status"] for p in history for r in p["recharges"]} == {"success"}
    payment = _read(client, f"/api/v1/payments/{order['payment']['id']}").json()
    assert {r["status"] for r in payment["recharges"]} == {"success"}

    shown = _read(client, f"/api/v1/api-access/b2b/batches/{batch['id']}").json()
    assert shown["counts"] == {"success": 2} and shown["status"] == "completed"
    assert shown["completedAt"] == "2026-11-21T10:00:10Z"  # when its last 10 seconds were up
    results = _read(client, f"/api/v1/api-access/b2b/batches/{batch['id']}/results.csv")
    rows = list(csv.DictReader(io.StringIO(b"".join(results.streaming_content).decode())))
    assert [row["status"] for row in rows] == ["success", "success"]

    assert (_statuses(), RechargeEvent.objects.count(), Event.objects.count()) == before


def test_the_key_dashboard_shows_success_and_writes_nothing(placed, time_machine, client):
    time_machine.move_to(READ_AT, tick=False)
    before = _statuses()
    client.force_login(placed["user"])
    url = reverse("accounts:api-key", kwargs={"key_id": placed["key"].public_id})
    page = _read(client, url).content.decode()
    assert "Processing (sandbox)" not in page and "Success (sandbox)" in page
    assert _statuses() == before


def test_the_status_filter_sees_a_due_row_as_success(placed, time_machine):
    client, slow = placed["client"], placed["slow"]

    def ids(query: str) -> set[str]:
        return {r["id"] for r in _read(client, f"{B2B}?{query}").json()["results"]}

    time_machine.move_to("2026-11-21 10:00:09Z", tick=False)
    assert slow.public_id in ids("status=processing")
    assert slow.public_id not in ids("status=success")
    time_machine.move_to(READ_AT, tick=False)
    assert slow.public_id not in ids("status=processing")
    assert slow.public_id in ids("status=success")
    assert slow.public_id in ids("status=processing,success")
    assert _statuses().count("processing") == 2


@pytest.mark.parametrize("settle", [sandbox_settle_task, recharges_sweep_task])
def test_the_task_and_the_sweeper_settle_for_real_with_the_event(placed, time_machine, settle):
    slow = placed["slow"]
    time_machine.move_to("2026-11-21 10:00:09Z", tick=False)
    settle()
    assert Recharge.objects.get(pk=slow.pk).status == "processing"  # not yet
    time_machine.move_to(READ_AT, tick=False)
    settle()
    assert set(_statuses()) == {"success"}
    slow.refresh_from_db()
    assert slow.delivered_at is not None
    moved = RechargeEvent.objects.filter(recharge=slow).order_by("id").last()
    assert moved is not None and (moved.from_status, moved.to_status) == ("processing", "success")
    delivered = [
        json.loads(event.body)["data"]["object"]
        for event in Event.objects.filter(type="recharge.delivered", livemode=False)
    ]
    assert [o["status"] for o in delivered if o["id"] == slow.public_id] == ["success"]
    assert sandbox_settle_task() == 0  # twice is safe
    # what a client now reads is what it was shown at 10.1 s, but from the row itself
    shown = placed["client"].get(f"{B2B}/{slow.public_id}").json()
    assert shown["status"] == "success" and shown["deliveredAmount"] is not None
    assert Decimal(shown["amount"]) == slow.amount
    # The batch completed when its 10 seconds were up, settled a moment later or not.
    batch = placed["client"].get(f"/api/v1/api-access/b2b/batches/{placed['batch']['id']}")
    assert batch.json()["completedAt"] == "2026-11-21T10:00:10Z"
