"""Statements (docs/contract.md §13, issue 18): a wallet's ledger entries of a period with a
header row, as JSON, CSV and XLSX, for a key or a web session; totals equal the ledger's;
formulas escaped; a million entries stream in bounded memory."""

from __future__ import annotations

import csv
import io
import os
import subprocess
import sys
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path

import openpyxl
import pytest
import time_machine
from django.db import connection
from rest_framework.test import APIClient

from tests.factories import ProductFactory, UserFactory, make_key
from tests.helpers import assert_ledger_balanced, bearer, fund, place
from wallet.models import LedgerEntry, Wallet
from wallet.services import wallet_adjust

pytestmark = pytest.mark.django_db

STATEMENT = "/api/v1/wallet/statement"
ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def month():
    """A user with a month of money: top-ups, payments, a staff adjustment with a formula."""
    user = UserFactory()
    staff = UserFactory(is_staff=True)
    product = ProductFactory(retail_price=Decimal("5.00"))
    with time_machine.travel(datetime(2026, 2, 28, 12, tzinfo=UTC), tick=False):
        fund(user, "10.00")  # before the period: the opening balance
    with time_machine.travel(datetime(2026, 3, 2, 9, tzinfo=UTC), tick=False):
        fund(user, "100.00")
        place(user, product, quantity=3)
    with time_machine.travel(datetime(2026, 3, 15, 9, tzinfo=UTC), tick=False):
        wallet = Wallet.objects.get(account=user.account, kind="live")
        wallet_adjust(wallet_id=wallet.pk, amount=Decimal("-2.50"), reason="=1+2 fee", by=staff)
    with time_machine.travel(datetime(2026, 4, 1, 0, 0, 1, tzinfo=UTC), tick=False):
        place(user, product)  # after the period
    return user


def get(user, **params):
    return APIClient().get(STATEMENT, params, **bearer(user))


def test_the_json_statement_totals_equal_the_ledger(month):
    body = get(month, **{"from": "2026-03-01", "to": "2026-03-31"}).json()
    assert body["from"] == "2026-03-01" and body["to"] == "2026-03-31"
    assert body["openingBalance"] == "10.00"
    assert body["credits"] == "100.00" and body["debits"] == "-17.50"
    assert body["closingBalance"] == "92.50" and body["count"] == 3
    assert body["hasMore"] is False
    kinds = [entry["kind"] for entry in body["data"]]
    assert kinds == ["topup", "payment", "adjustment"]
    assert body["data"][-1]["memo"] == "=1+2 fee"  # JSON is data, not a spreadsheet
    wallet = Wallet.objects.get(account=month.account, kind="live")
    entries = LedgerEntry.objects.filter(
        wallet=wallet, created_at__date__gte="2026-03-01", created_at__date__lte="2026-03-31"
    )
    assert sum(e.amount for e in entries) == Decimal("82.50")
    assert body["data"][-1]["balanceAfter"] == f"{entries.order_by('id').last().balance_after}"
    assert_ledger_balanced()


def test_the_csv_has_a_header_signed_amounts_and_escaped_text(month):
    response = get(month, **{"from": "2026-03-01", "to": "2026-03-31", "format": "csv"})
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/csv")
    assert "statement-2026-03-01-2026-03-31.csv" in response["Content-Disposition"]
    rows = list(csv.reader(io.StringIO(b"".join(response.streaming_content).decode())))
    header, *entries = rows
    assert header[:6] == ["created_at", "kind", "reference", "amount", "currency", "balance_after"]
    assert [row[3] for row in entries] == ["100.00", "-15.00", "-2.50"]
    assert entries[0][0] == "2026-03-02T09:00:00Z"
    assert entries[-1][6] == "'=1+2 fee"  # a spreadsheet shows it, never runs it


def test_the_xlsx_holds_the_same_rows(month):
    response = get(month, **{"from": "2026-03-01", "to": "2026-03-31", "format": "xlsx"})
    assert response.status_code == 200
    book = openpyxl.load_workbook(io.BytesIO(b"".join(response.streaming_content)))
    rows = list(book.active.iter_rows(values_only=True))
    assert rows[0][:4] == ("created_at", "kind", "reference", "amount")
    assert [row[3] for row in rows[1:]] == [100, -15, -2.5]  # numbers a spreadsheet adds up
    assert rows[-1][6] == "'=1+2 fee"


def test_a_key_reads_its_own_wallet_and_a_test_key_its_sandbox(month):
    _key, live = make_key(month, mode="live")
    client = APIClient()
    client.credentials(HTTP_X_API_KEY=live)
    body = client.get(STATEMENT, {"from": "2026-03-01", "to": "2026-03-31"}).json()
    assert body["count"] == 3 and body["livemode"] is True
    _key, test = make_key(month, mode="test")
    client.credentials(HTTP_X_API_KEY=test)
    body = client.get(STATEMENT, {"from": "2026-03-01", "to": "2026-03-31"}).json()
    assert body["count"] == 0 and body["livemode"] is False


@pytest.mark.parametrize(
    "params",
    [
        {"from": "2026-13-01"},
        {"from": "01/03/2026"},
        {"to": "2026-3-1"},
        {"to": "9999-12-31"},
        {"from": "2026-03-10", "to": "2026-03-01"},
        {"format": "pdf"},
    ],
)
def test_bad_periods_and_formats_are_400(month, params):
    response = get(month, **params)
    assert response.status_code == 400
    assert response.json()["code"] == "validation_error"


def test_the_default_period_is_this_month_so_far(month):
    with time_machine.travel(datetime(2026, 3, 20, tzinfo=UTC), tick=False):
        body = get(month).json()
    assert body["from"] == "2026-03-01" and body["to"] == "2026-03-20"


def test_statements_need_a_login():
    assert APIClient().get(STATEMENT).status_code == 401


STREAM = """
import os, resource, sys, django
django.setup()
from django.test import Client
from django.test.utils import setup_test_environment
setup_test_environment()
from accounts.models import User
user = User.objects.get(email=sys.argv[1])
client = Client()
client.force_login(user)
from accounts.services import tokens_for
access = str(tokens_for(user).access_token)
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
response = client.get("/api/v1/wallet/statement?from=2020-01-01&to=2030-12-31&format=csv",
                      HTTP_AUTHORIZATION="Bearer " + access)
size = rows = 0
for chunk in response.streaming_content:
    size += len(chunk)
    rows += chunk.count(b"\\n")
after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(rows, size, before, after)
"""


@pytest.mark.django_db(transaction=True)
def test_a_million_entries_stream_in_bounded_memory():
    user = UserFactory(email="million@example.com")
    fund(user, "1.00")
    wallet = Wallet.objects.get(account=user.account, kind="live")
    with connection.cursor() as cursor:  # a million entries, as the ledger would hold them
        cursor.execute(
            """
            INSERT INTO wallet_ledgerentry
                (public_id, wallet_id, kind, amount, balance_after, currency, reference, memo,
                 created_at)
            SELECT 'led_m' || n, %s, 'adjustment', 0.01, 1.00 + n * 0.01, 'EUR', 'adj_m' || n,
                   'bulk', now() - interval '1 day' + n * interval '1 millisecond'
            FROM generate_series(1, 1000000) AS n
            """,
            [wallet.pk],
        )
    db = connection.settings_dict
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "reseller.settings.test",
        "DATABASE_URL": f"postgres://{db['USER']}@{db['HOST']}:{db['PORT']}/{db['NAME']}",
    }
    result = subprocess.run(
        [sys.executable, "-c", STREAM, user.email],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr
    rows, size, before, after = map(int, result.stdout.split()[-4:])
    print(f"statement CSV: {rows} rows, {size} bytes, peak RSS {before} -> {after} KiB")
    assert rows == 1_000_002  # the header, the first top-up and the million
    assert size > 50_000_000  # about 90 MB of CSV …
    assert (after - before) < 60_000  # … in under 60 MB more memory (ru_maxrss is in KiB)
