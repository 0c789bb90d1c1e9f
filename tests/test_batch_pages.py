"""Batches on the dashboard (issue 18): a CSV or XLSX upload is checked row by row before
anything is charged, errors by line and column; the total is confirmed, then one debit; the
confirmation cannot be paid twice; the batch page follows it and gives the results."""

from __future__ import annotations

import io
import threading
from decimal import Decimal

import openpyxl
import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import connection, transaction

from accounts.services import account_set_b2b
from orders.batches import batches_complete
from orders.models import Batch, Order
from recharges.models import Recharge
from reseller.idempotency import lock_id
from tests.factories import OperatorFactory, ProductFactory, UserFactory, make_country
from tests.helpers import assert_ledger_balanced, fund, process
from wallet.models import LedgerEntry, Wallet

pytestmark = pytest.mark.django_db

NUMBER = "+525512345678"


@pytest.fixture
def shop(client):
    user = UserFactory()
    account_set_b2b(account=user.account, is_b2b=True)
    fund(user, "10000.00")
    client.force_login(user)
    return user


@pytest.fixture
def telcel():
    mexico = make_country("MX", "Mexico", "+52", "MXN")
    operator = OperatorFactory(country=mexico, slug="telcel", name="Telcel")
    ProductFactory(
        operator=operator, retail_price=Decimal("1.00"), local_amount=Decimal("100"),
        product_type="airtime",
    )  # fmt: skip
    return operator


def csv_file(rows: list[str], name="payroll.csv") -> SimpleUploadedFile:
    return SimpleUploadedFile(name, "\n".join(rows).encode(), content_type="text/csv")


def balance(user) -> Decimal:
    return Wallet.objects.get(account=user.account, kind="live").balance


def test_a_5000_row_file_with_17_bad_rows_lists_exactly_those_and_charges_nothing(
    client, shop, telcel
):
    bad = set(range(10, 5000, 300))
    assert len(bad) == 17
    wrong_number = set(sorted(bad)[::2])  # the others ask for an amount Telcel does not sell
    rows = ["recipientNumber,operator,amount,quantity,reference"]
    for n in range(5000):
        if n in wrong_number:
            rows.append(f"+5255123,MX/telcel,100,1,r{n}")
        elif n in bad:
            rows.append(f"{NUMBER},MX/telcel,55,1,r{n}")
        else:
            rows.append(f"{NUMBER},MX/telcel,100,1,r{n}")
    response = client.post("/batches/upload/", {"file": csv_file(rows)})
    assert response.status_code == 400
    errors = response.context["errors"]
    assert sorted(error.line for error in errors) == sorted(n + 2 for n in bad)
    columns = {error.line: error.column for error in errors}
    assert {columns[n + 2] for n in wrong_number} == {"recipientNumber"}
    assert {columns[n + 2] for n in bad - wrong_number} == {"operator"}
    assert "17 problems, nothing was charged" in response.content.decode()
    assert not Order.objects.exists() and balance(shop) == Decimal("10000.00")

    fixed = [rows[0]] + [f"{NUMBER},MX/telcel,100,1,r{n}" for n in range(5000)]
    confirm = client.post("/batches/upload/", {"file": csv_file(fixed)})
    assert confirm.status_code == 200
    assert confirm.context["total"] == Decimal("5000.00") and confirm.context["units"] == 5000
    assert not Order.objects.exists()  # nothing charged before the confirmation
    token = confirm.context["token"]
    placed = client.post("/batches/confirm/", {"token": token})
    batch = Batch.objects.get()
    assert placed["Location"] == f"/batches/{batch.public_id}/"
    again = client.post("/batches/confirm/", {"token": token})  # a second press
    assert again["Location"] == placed["Location"] and Batch.objects.count() == 1
    wallet = Wallet.objects.get(account=shop.account, kind="live")
    assert LedgerEntry.objects.filter(wallet=wallet, kind="payment").count() == 1
    assert balance(shop) == Decimal("5000.00")
    assert Recharge.objects.filter(reference="r4999").count() == 1
    assert_ledger_balanced()


def test_an_xlsx_file_with_product_ids_runs_to_completion(client, shop, telcel):
    product = telcel.products.get()
    book = openpyxl.Workbook()
    sheet = book.active
    sheet.append(["Recipient Number", "Product ID", "Quantity", "Reference"])
    sheet.append([NUMBER, product.public_id, 2, "a"])
    sheet.append([NUMBER, product.public_id, 1, "+1+cmd()"])
    data = io.BytesIO()
    book.save(data)
    upload = SimpleUploadedFile("topups.xlsx", data.getvalue())
    confirm = client.post("/batches/upload/", {"file": upload})
    assert confirm.status_code == 200, confirm.context.get("errors")
    response = client.post("/batches/confirm/", {"token": confirm.context["token"]})
    batch = Batch.objects.get()
    page = client.get(response["Location"]).content.decode()
    assert 'data-testid="batch-status"' in page and "Running" in page
    process(batch.order)
    batches_complete()
    page = client.get(response["Location"]).content.decode()
    assert "Completed" in page and 'data-testid="count-delivered">3<' in page
    status = client.get(f"/batches/{batch.public_id}/status.json").json()
    assert status["status"] == "completed" and status["counts"] == {"delivered": 3}
    results = b"".join(client.get(f"/batches/{batch.public_id}/results.csv").streaming_content)
    text = results.decode()
    assert text.count("\n") == 4 and "'+1+cmd()" in text
    assert_ledger_balanced()


def test_unreadable_files_and_missing_columns_are_explained(client, shop, telcel):
    cases = [
        (SimpleUploadedFile("a.pdf", b"%PDF-1.4"), "Upload a .csv or .xlsx file."),
        (SimpleUploadedFile("a.xlsx", b"not a zip"), "not an XLSX file"),
        (csv_file(["number,what", "+525512345678,x"]), "The first row names the columns"),
        (csv_file(["recipientNumber,productId"]), "no rows after its header"),
        (csv_file([""]), "The file is empty."),
    ]
    for upload, message in cases:
        response = client.post("/batches/upload/", {"file": upload})
        assert response.status_code == 400 and message in response.content.decode(), message
    assert not Order.objects.exists()


def test_a_batch_the_wallet_cannot_cover_is_not_offered(client, shop, telcel):
    rows = ["recipientNumber,operator,amount,quantity"] + [f"{NUMBER},MX/telcel,100,20"] * 600
    confirm = client.post("/batches/upload/", {"file": csv_file(rows)})
    assert confirm.context["covered"] is False
    assert 'action="/batches/confirm/"' not in confirm.content.decode()


def test_batch_pages_are_for_resellers_and_private(client, telcel):
    consumer = UserFactory()
    client.force_login(consumer)
    assert client.get("/batches/").status_code == 403
    owner = UserFactory()
    account_set_b2b(account=owner.account, is_b2b=True)
    fund(owner, "10.00")
    client.force_login(owner)
    product = telcel.products.get()
    confirm = client.post(
        "/batches/upload/",
        {"file": csv_file(["recipientNumber,productId", f"{NUMBER},{product.public_id}"])},
    )
    client.post("/batches/confirm/", {"token": confirm.context["token"]})
    batch = Batch.objects.get()
    stranger = UserFactory()
    account_set_b2b(account=stranger.account, is_b2b=True)
    client.force_login(stranger)
    for path in ("/", "status.json", "results.csv"):
        url = f"/batches/{batch.public_id}/" + ("" if path == "/" else path)
        assert client.get(url).status_code == 404
    # Another user's upload token does nothing for this user.
    assert client.post("/batches/confirm/", {"token": confirm.context["token"]}).status_code == 302
    assert Batch.objects.count() == 1


def test_a_file_carries_the_extra_fields_a_product_needs_as_columns(client, shop, telcel):
    """Contract section 17: every kind is sold in batches, and a line carries its extra
    fields: a column each, named as the API names them (``senderName``, or
    ``fields.senderName``); a missing one is named by line and column."""
    product = telcel.products.get()
    product.required_fields = ["senderName", "senderPhone"]
    product.save(update_fields=["required_fields"])
    rows = [
        "recipientNumber,productId,Sender Name,fields.senderPhone,recipientName",
        f"{NUMBER},{product.public_id},Ana López,+34600111222,Luis",
        f"{NUMBER},{product.public_id},,+34600111222,",
    ]
    refused = client.post("/batches/upload/", {"file": csv_file(rows)})
    assert refused.status_code == 400
    errors = refused.context["errors"]
    assert [(e.line, e.column) for e in errors] == [(3, "Sender Name")], errors
    assert not Order.objects.exists()
    confirm = client.post("/batches/upload/", {"file": csv_file(rows[:2])})
    assert confirm.status_code == 200, confirm.context.get("errors")
    client.post("/batches/confirm/", {"token": confirm.context["token"]})
    recharge = Recharge.objects.get()
    assert recharge.fields == {
        "senderName": "Ana López",
        "senderPhone": "+34600111222",
        "recipientName": "Luis",
    }
    assert_ledger_balanced()


def test_a_second_press_while_the_first_still_places_the_batch_says_so(client, shop, telcel):
    """The first press still runs (its key's lock held by another connection): the second
    is told the batch is being placed, not shown an API error, and charges nothing."""
    rows = ["recipientNumber,operator,amount", f"{NUMBER},MX/telcel,100"]
    confirm = client.post("/batches/upload/", {"file": csv_file(rows)})
    token = confirm.context["token"]
    key = lock_id(account_id=shop.account.pk, livemode=True, key=f"site-batch-{token}")
    held, done = threading.Event(), threading.Event()

    def first_press() -> None:
        try:
            with transaction.atomic(), connection.cursor() as cursor:
                cursor.execute("SELECT pg_advisory_xact_lock(%s)", [key])
                held.set()
                done.wait(30)
        finally:
            connection.close()

    thread = threading.Thread(target=first_press)
    thread.start()
    try:
        assert held.wait(30)
        second = client.post("/batches/confirm/", {"token": token}, follow=True)
    finally:
        done.set()
        thread.join(30)
    assert "This batch is being placed" in second.content.decode()
    assert not Batch.objects.exists() and balance(shop) == Decimal("10000.00")
