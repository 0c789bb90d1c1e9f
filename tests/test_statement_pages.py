"""The statement on the site (issue 18, docs/contract.md §13): /wallet/statement/ shows a
period's totals, which equal the ledger's, its first entries and the recharges of the period
(counted by status, operator and country, narrowed by filters); its CSV and XLSX downloads are
the API's rows, formulas escaped; a bad date is a message on the page, never a 500. The wallet
page's monthly chart says what the ledger says, month by month."""

from __future__ import annotations

import csv
import io
import re
from datetime import UTC, datetime
from decimal import Decimal

import openpyxl
import pytest
import time_machine
from django.db import connection, transaction
from django.test import Client
from django.test.utils import CaptureQueriesContext

from orders.models import Order
from orders.pricing import LineRequest
from orders.services import order_place_with_wallet
from tests.factories import ProductFactory, UserFactory, make_country, make_key
from tests.helpers import (
    REJECTS,
    assert_ledger_balanced,
    fund,
    place,
    process,
    sandbox_order,
)
from wallet.models import LedgerEntry, Wallet
from wallet.services import wallet_adjust

pytestmark = pytest.mark.django_db

PAGE = "/wallet/statement/"
MARCH = {"from": "2026-03-01", "to": "2026-03-31"}


def at(*when):
    return time_machine.travel(datetime(*when, tzinfo=UTC), tick=False)


def live_wallet(user) -> Wallet:
    return Wallet.objects.get(account=user.account, kind="live")


def logged_in(user) -> Client:
    client = Client(raise_request_exception=False)
    client.force_login(user)
    return client


def body(response) -> bytes:
    return b"".join(response.streaming_content)


@pytest.fixture
def month():
    """A user with a month of money: top-ups, payments, a staff adjustment with a formula."""
    user = UserFactory()
    staff = UserFactory(is_staff=True)
    product = ProductFactory(retail_price=Decimal("5.00"))
    with at(2026, 2, 28, 12):
        fund(user, "10.00")  # before the period: the opening balance
    with at(2026, 3, 2, 9):
        fund(user, "100.00")
        place(user, product, quantity=3)
    with at(2026, 3, 15, 9):
        wallet_adjust(
            wallet_id=live_wallet(user).pk, amount=Decimal("-2.50"), reason="=1+2 fee", by=staff
        )
    with at(2026, 4, 1, 0, 0, 1):
        place(user, product)  # after the period
    return user


def test_the_page_totals_equal_the_ledger_and_cover_the_balance(month):
    response = logged_in(month).get(PAGE, MARCH)
    assert response.status_code == 200
    summary = response.context["summary"]
    assert summary["opening_balance"] == Decimal("10.00")
    assert summary["credits"] == Decimal("100.00") and summary["debits"] == Decimal("-17.50")
    assert summary["closing_balance"] == Decimal("92.50") and summary["count"] == 3
    march = LedgerEntry.objects.filter(
        wallet=live_wallet(month),
        created_at__gte=datetime(2026, 3, 1, tzinfo=UTC),
        created_at__lt=datetime(2026, 4, 1, tzinfo=UTC),
    )
    assert summary["credits"] + summary["debits"] == sum(e.amount for e in march)
    assert summary["closing_balance"] == march.order_by("id").last().balance_after
    assert [e.kind for e in response.context["entries"]] == ["topup", "payment", "adjustment"]
    html = response.content.decode()
    for testid, text in [("opening", "10.00"), ("credits", "100.00"), ("closing", "92.50")]:
        assert f'data-testid="{testid}">{text} EUR' in html
    assert html.count('data-testid="statement-entry"') == 3
    assert "=1+2 fee" in html  # shown as text on the page, never a formula
    assert "statement.csv?from=2026-03-01&amp;to=2026-03-31" in html

    everything = logged_in(month).get(PAGE, {"from": "2026-01-01", "to": "2026-12-31"})
    summary = everything.context["summary"]
    assert summary["opening_balance"] == Decimal("0.00")
    assert summary["closing_balance"] == live_wallet(month).balance == Decimal("87.50")
    assert summary["count"] == LedgerEntry.objects.filter(wallet=live_wallet(month)).count()
    assert_ledger_balanced()


def test_the_default_period_is_this_month_so_far(month):
    with at(2026, 3, 20, 12):
        response = logged_in(month).get(PAGE)
    assert response.context["values"] == {"from": "2026-03-01", "to": "2026-03-20"}
    assert response.context["summary"]["count"] == 3
    assert 'type="date" value="2026-03-01"' in response.content.decode()


def test_the_page_shows_the_first_100_entries_and_the_downloads_hold_them_all():
    user = UserFactory()
    staff = UserFactory(is_staff=True)
    wallet = Wallet.objects.create(account=user.account)
    with at(2026, 3, 10, 12):
        for number in range(105):
            wallet_adjust(
                wallet_id=wallet.pk, amount=Decimal("1.00"), reason=f"n{number}", by=staff
            )
    client = logged_in(user)
    response = client.get(PAGE, MARCH)
    assert len(response.context["entries"]) == 100
    assert response.context["entries"][0].memo == "n0"  # oldest first, like the downloads
    assert 'data-testid="more-entries"' in response.content.decode()
    rows = list(csv.reader(io.StringIO(body(client.get("/wallet/statement.csv", MARCH)).decode())))
    assert len(rows) == 1 + 105


def test_the_csv_download_has_the_header_signed_amounts_and_escaped_formulas(month):
    response = logged_in(month).get("/wallet/statement.csv", MARCH)
    assert response.status_code == 200
    assert response.streaming  # streamed, never built in memory
    assert response["Content-Type"].startswith("text/csv")
    assert 'filename="statement-2026-03-01-2026-03-31.csv"' in response["Content-Disposition"]
    header, *rows = csv.reader(io.StringIO(body(response).decode()))
    assert header == [
        "created_at",
        "kind",
        "reference",
        "amount",
        "currency",
        "balance_after",
        "memo",
        "entry_id",
    ]
    assert [row[1] for row in rows] == ["topup", "payment", "adjustment"]
    assert [row[3] for row in rows] == ["100.00", "-15.00", "-2.50"]
    assert rows[0][0] == "2026-03-02T09:00:00Z"
    assert rows[-1][5] == "92.50"
    assert rows[-1][6] == "'=1+2 fee"  # a spreadsheet shows it, never runs it


def test_the_xlsx_download_holds_the_same_rows(month):
    response = logged_in(month).get("/wallet/statement.xlsx", MARCH)
    assert response.status_code == 200
    assert response.streaming
    assert "statement-2026-03-01-2026-03-31.xlsx" in response["Content-Disposition"]
    book = openpyxl.load_workbook(io.BytesIO(body(response)))
    header, *rows = list(book.active.iter_rows(values_only=True))
    assert header[:6] == ("created_at", "kind", "reference", "amount", "currency", "balance_after")
    assert [row[3] for row in rows] == [100, -15, -2.5]  # numbers a spreadsheet adds up
    assert rows[-1][6] == "'=1+2 fee"


@pytest.mark.parametrize(
    "params",
    [
        {"from": "2026-13-01"},
        {"from": "01/03/2026"},
        {"to": "2026-3-1"},
        {"from": "2026-03-10", "to": "2026-03-01"},
        {"from": "2026-02-30"},
        {"from": "2026-03-01", "to": "9999-12-31"},  # the day after it does not exist
    ],
)
def test_a_bad_period_is_a_message_on_the_page_never_a_500(month, params):
    client = logged_in(month)
    response = client.get(PAGE, params)
    assert response.status_code == 200
    html = response.content.decode()
    assert 'data-testid="period-error"' in html
    assert "summary" not in response.context and 'data-testid="statement-totals"' not in html
    for download in ("/wallet/statement.csv", "/wallet/statement.xlsx"):
        answer = client.get(download, params)
        assert answer.status_code == 302 and answer["Location"].startswith(PAGE)
        assert 'data-testid="period-error"' in client.get(answer["Location"]).content.decode()


def test_the_period_errors_are_in_the_readers_language(month):
    client = logged_in(month)
    response = client.get(
        PAGE, {"from": "2026-03-10", "to": "2026-03-01"}, HTTP_ACCEPT_LANGUAGE="es"
    )
    assert "El periodo empieza después de terminar." in response.content.decode()


def test_a_download_without_its_period_goes_to_the_page_to_choose_one(month):
    client = logged_in(month)
    for params in ({}, {"from": "2026-03-01"}, {"to": "2026-03-31"}):
        response = client.get("/wallet/statement.csv", params)
        assert response.status_code == 302 and response["Location"].startswith(PAGE), params


def test_the_statement_and_its_downloads_need_a_login():
    for path in (PAGE, "/wallet/statement.csv", "/wallet/statement.xlsx"):
        response = Client().get(path, MARCH)
        assert response.status_code == 302, path
        assert response["Location"].startswith("/accounts/login/"), path


def test_another_accounts_entries_and_recharges_never_appear(month):
    other = UserFactory()
    with at(2026, 3, 5, 9):
        fund(other, "777.00")
        place(other, ProductFactory(retail_price=Decimal("7.77")), number="+525512340777")
    client = logged_in(month)
    response = client.get(PAGE, MARCH)
    html = response.content.decode()
    assert "777.00" not in html and "7.77" not in html and "769.23" not in html
    assert response.context["summary"]["count"] == 3
    assert response.context["recharges"].overall.count == 3  # the user's three, not the fourth
    other_refs = set(
        LedgerEntry.objects.filter(wallet=live_wallet(other)).values_list("reference", flat=True)
    )
    for download in ("/wallet/statement.csv", "/wallet/statement.xlsx"):
        content = body(client.get(download, MARCH))
        if download.endswith(".csv"):
            cells = [cell for row in csv.reader(io.StringIO(content.decode())) for cell in row]
        else:
            sheet = openpyxl.load_workbook(io.BytesIO(content)).active
            cells = [cell for row in sheet.iter_rows(values_only=True) for cell in row]
        # The other account's amounts, by value (a sheet holds numbers, the CSV text; not
        # "777" in the text: ids are random letters and digits), its number and references.
        amounts = {_number(cell) for cell in cells} - {None}
        assert not amounts & {Decimal(v) for v in ("777", "7.77", "-7.77", "769.23")}, download
        text = " ".join(str(cell) for cell in cells)
        assert "5512340777" not in text
        assert not any(reference in text for reference in other_refs)


def _number(cell) -> Decimal | None:
    if isinstance(cell, int | float | Decimal):
        return Decimal(str(cell))
    if isinstance(cell, str) and re.fullmatch(r"-?\d+(\.\d+)?", cell.strip()):
        return Decimal(cell.strip())
    return None


def test_the_charts_monthly_numbers_equal_the_ledger():
    user = UserFactory()
    staff = UserFactory(is_staff=True)
    product = ProductFactory(retail_price=Decimal("5.00"))
    with at(2025, 3, 31, 23, 59):
        fund(user, "1000.00")  # thirteen months before "now": not in the chart
    with at(2025, 4, 1, 0, 0, 1):
        fund(user, "20.00")  # the first month of the chart
    with at(2025, 11, 30, 23, 59, 59):
        place(user, product, quantity=2)
    with at(2026, 1, 15, 12):
        fund(user, "50.00")
        place(user, product)
        wallet_adjust(wallet_id=live_wallet(user).pk, amount=Decimal("-0.25"), reason="x", by=staff)
    with at(2026, 3, 20, 12):
        place(user, product, quantity=3)
        response = logged_in(user).get("/wallet/")
    assert response.status_code == 200
    months = [item["total"] for item in response.context["monthly"]]
    assert [m.month.isoformat()[:7] for m in months] == [
        "2025-04", "2025-05", "2025-06", "2025-07", "2025-08", "2025-09",
        "2025-10", "2025-11", "2025-12", "2026-01", "2026-02", "2026-03",
    ]  # fmt: skip
    entries = LedgerEntry.objects.filter(wallet=live_wallet(user))
    for total in months:
        of_month = [
            e.amount
            for e in entries
            if (e.created_at.year, e.created_at.month) == (total.month.year, total.month.month)
        ]
        assert total.credits == sum((a for a in of_month if a > 0), Decimal("0.00"))
        assert total.debits == sum((a for a in of_month if a < 0), Decimal("0.00"))
    assert (months[0].credits, months[7].debits) == (Decimal("20.00"), Decimal("-10.00"))
    assert (months[9].credits, months[9].debits) == (Decimal("50.00"), Decimal("-5.25"))
    html = response.content.decode()
    assert "<svg" in html and 'role="img"' in html and "<title" in html
    assert html.count('class="chart-credit"') == 2 and html.count('class="chart-debit"') == 3
    assert 'data-month="2026-01" data-credits="50.00" data-debits="-5.25"' in html
    assert "/wallet/statement/?from=2026-01-01&amp;to=2026-01-31" in html  # the month's statement
    assert "/wallet/statement/?from=2026-03-01&amp;to=2026-03-20" in html  # … so far
    assert 'href="/wallet/statement/"' in html  # the page links to the statement


def test_the_chart_draws_in_the_readers_language_with_svg_numbers():
    """Spanish writes 12,5 for twelve and a half: the SVG's coordinates never do."""
    user = UserFactory()
    with at(2026, 3, 2, 9):
        fund(user, "33.33")
        response = logged_in(user).get("/wallet/", HTTP_ACCEPT_LANGUAGE="es")
    html = response.content.decode()
    svg = html[html.index("<svg") : html.index("</svg>")]
    for attribute in (' x="', ' y="', ' height="'):
        values = [part.split('"')[0] for part in svg.split(attribute)[1:]]
        assert values and all("," not in value for value in values), (attribute, values)
    assert "Mar" in svg  # the month's short name (marzo)


def test_a_wallet_without_movement_has_no_chart_but_says_so():
    response = logged_in(UserFactory()).get("/wallet/")
    html = response.content.decode()
    assert "<svg" not in html and 'data-testid="monthly-chart"' in html


@pytest.fixture
def recharges():
    """March: two recharges in Mexico on the site (one delivered, one failed), one in Mexico
    with a live key, one in Colombia; a sandbox recharge and one in April that never count."""
    user = UserFactory()
    fund(user, "500.00")
    mexico = ProductFactory(retail_price=Decimal("5.00"))
    colombia_country = make_country("CO", "Colombia", "+57", "COP")
    colombia = ProductFactory(
        retail_price=Decimal("7.00"), operator__country=colombia_country, operator__name="Claro"
    )
    key, _plaintext = make_key(user, mode="live", name="Shop server")
    with at(2026, 3, 3, 9):
        process(place(user, mexico))
        process(place(user, mexico, number=REJECTS))
        with transaction.atomic():
            order_place_with_wallet(
                account=user.account,
                livemode=True,
                channel=Order.Channel.B2B,
                lines=[LineRequest(product=mexico, recipient_number="+525512345678", quantity=2)],
                currency="EUR",
                user=user,
                api_key=key,
            )
        place(user, colombia, number="+573001234567")
        sandbox_order(user, mexico)
    with at(2026, 4, 2, 9):
        place(user, mexico)
    return user, key, mexico.operator, colombia.operator


def _counts(response, testid: str) -> dict[str, int]:
    html = response.content.decode()
    found = {}
    for part in html.split(f'data-testid="{testid}" data-key="')[1:]:
        key, rest = part.split('"', 1)
        found[key] = int(rest.split('data-count="', 1)[1].split('"', 1)[0])
    return found


def test_the_recharges_of_the_period_are_counted_by_status_operator_and_country(recharges):
    user, _key, telcel, claro = recharges
    response = logged_in(user).get(PAGE, MARCH)
    summary = response.context["recharges"]
    assert summary.overall.count == 5 and summary.overall.totals == {"EUR": Decimal("27.00")}
    assert _counts(response, "by-status") == {"queued": 3, "delivered": 1, "failed": 1}
    assert _counts(response, "by-operator") == {telcel.public_id: 4, claro.public_id: 1}
    assert _counts(response, "by-country") == {"MX": 4, "CO": 1}
    assert 'data-testid="recharges-total"' in response.content.decode()


@pytest.mark.parametrize(
    ("filters", "count"),
    [
        ({"status": "failed"}, 1),
        ({"status": "delivered"}, 1),
        ({"country": "CO"}, 1),
        ({"country": "MX", "status": "queued"}, 2),
        ({"key": "site"}, 3),
    ],
)
def test_the_recharge_filters_narrow_the_counts(recharges, filters, count):
    user, _key, _telcel, _claro = recharges
    response = logged_in(user).get(PAGE, {**MARCH, **filters})
    assert response.context["recharges"].overall.count == count
    assert response.context["summary"]["count"] > 0  # the ledger's totals stay the period's
    assert sum(_counts(response, "by-status").values()) == count


def test_the_operator_and_key_filters_name_what_they_narrow_to(recharges):
    user, key, telcel, claro = recharges
    client = logged_in(user)
    html = client.get(PAGE, MARCH).content.decode()
    assert f'value="{key.public_id}">Shop server ({key.prefix}…)' in html
    by_key = client.get(PAGE, {**MARCH, "key": key.public_id})
    assert _counts(by_key, "by-operator") == {telcel.public_id: 2}
    by_operator = client.get(PAGE, {**MARCH, "operator": claro.public_id})
    assert _counts(by_operator, "by-country") == {"CO": 1}
    nothing = client.get(PAGE, {**MARCH, "operator": claro.public_id, "key": key.public_id})
    assert nothing.context["recharges"].overall.count == 0
    assert "No recharge in this period with these filters." in nothing.content.decode()


@pytest.mark.parametrize(
    "filters",
    [{"status": "sent"}, {"country": "Z" * 300}, {"operator": "opr_nope"}, {"key": "key_x"}],
)
def test_a_bad_filter_is_an_error_on_the_page_and_counts_everything(recharges, filters):
    user, *_rest = recharges
    response = logged_in(user).get(PAGE, {**MARCH, **filters})
    assert response.status_code == 200
    assert 'data-testid="filter-error"' in response.content.decode()
    assert response.context["recharges"].overall.count == 5


def test_another_accounts_key_is_no_filter_of_mine(recharges):
    user, *_rest = recharges
    stranger_key, _plaintext = make_key(UserFactory(), mode="live", name="Not yours")
    response = logged_in(user).get(PAGE, {**MARCH, "key": stranger_key.public_id})
    assert "Not yours" not in response.content.decode()
    assert 'data-testid="filter-error"' in response.content.decode()


def test_the_page_reads_a_fixed_number_of_queries_however_many_recharges(recharges):
    user, _key, _telcel, _claro = recharges
    client = logged_in(user)
    client.get(PAGE, MARCH)  # the session and the like, read once
    with CaptureQueriesContext(connection) as few:
        client.get(PAGE, MARCH)
    product = ProductFactory(retail_price=Decimal("1.00"))
    with at(2026, 3, 9, 9):
        for _ in range(6):
            place(user, product, quantity=2)
    with CaptureQueriesContext(connection) as many:
        response = client.get(PAGE, MARCH)
    assert response.context["recharges"].overall.count == 5 + 12
    assert len(many) == len(few)
