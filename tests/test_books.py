"""The books of the business (docs/books.md): what a sale, a failure, a refund and a reversal
write, the margin report read from the lines, provider floats, and ``check_books``.

Two simulator providers sell one product (costs 90% and 95% of its price); numbers ending in
9990 are refused by the simulator, so those recharges fail and are refunded."""

from datetime import timedelta
from decimal import Decimal
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.db import transaction
from django.test import Client, override_settings
from django.utils import timezone
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from books.models import Entry
from books.selectors import journals_unbalanced, margin_report, provider_floats
from catalog.selectors import fx_convert
from catalog.services import fx_rate_set
from recharges import processor
from recharges.books_check import books_check
from recharges.models import Recharge
from recharges.services import recharge_reverse
from tests.factories import ProductFactory, UserFactory
from tests.helpers import (
    assert_ledger_balanced,
    away_from_midnight,
    funded_order,
    second_factor_login,
)
from upstreams.models import Provider
from upstreams.services import catalog_sync

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _one_day():
    """These tests compare "today" with the rows they write: never across midnight UTC."""
    with away_from_midnight():
        yield


S = Recharge.Status
L, K = Entry.Ledger, Entry.Kind


def cli(*args) -> str:
    out = StringIO()
    call_command(*args, stdout=out)
    return out.getvalue().strip()


@pytest.fixture
def product():
    product = ProductFactory(retail_price=Decimal("5.00"))
    cli("create_provider", "--name", "sim-a", "--kind", "simulator", "--currency", "EUR")
    cli("create_provider", "--name", "sim-b", "--kind", "simulator", "--currency", "EUR")
    for name, share in (("sim-a", 90), ("sim-b", 95)):
        with override_settings(AIRTIME_SIMULATOR_COST_PERCENT=share):
            catalog_sync(provider=Provider.objects.get(name=name))
    yield product


def place(product, *, number="+525512345678", quantity=1, user=None):
    order = funded_order(product, number=number, quantity=quantity, funds="500.00", user=user)
    recharges = list(order.recharges.order_by("id"))
    for recharge in recharges:
        processor.recharge_process(recharge_id=recharge.pk)
        recharge.refresh_from_db()
    return recharges


def lines(recharge) -> dict:
    return {
        (e.journal, e.ledger): (e.amount, e.currency)
        for e in Entry.objects.filter(reference=recharge.public_id)
    }


def assert_books_right():
    assert journals_unbalanced() == []
    assert books_check() == []
    assert cli("check_books") == "books ok"


def test_a_sale_books_its_price_and_its_cost_and_the_margin_is_their_difference(product):
    (recharge,) = place(product)
    assert recharge.status == S.DELIVERED and recharge.provider == "sim-a"
    ref = recharge.public_id
    assert lines(recharge) == {
        (f"sale:{ref}", L.CUSTOMERS): (Decimal("5.0000"), "EUR"),
        (f"sale:{ref}", L.REVENUE): (Decimal("-5.0000"), "EUR"),
        (f"cost:{ref}", L.COST_OF_SALES): (Decimal("4.5000"), "EUR"),
        (f"cost:{ref}", L.PROVIDER_FLOAT): (Decimal("-4.5000"), "EUR"),
    }
    (row,) = margin_report(by="provider")
    assert row == {
        "key": "sim-a",
        "currency": "EUR",
        "sales": 1,
        "revenue": Decimal("5.0000"),
        "cost": Decimal("4.5000"),
        "margin": Decimal("0.5000"),
    }
    assert row["margin"] == recharge.margin
    assert_books_right()


def test_a_failure_books_nothing_and_its_refund_is_the_wallets(product):
    (recharge,) = place(product, number="+525512349990")  # refused by both providers
    assert recharge.status == S.FAILED and recharge.refunded
    assert lines(recharge) == {}
    assert margin_report(by="day") == []
    assert_books_right()
    assert_ledger_balanced()


def test_a_reversal_turns_the_sale_round_and_the_margin_report_nets_it(product):
    kept, taken_back = place(product, quantity=2)
    assert recharge_reverse(recharge_id=taken_back.pk, source="test")
    ref = taken_back.public_id
    booked = lines(taken_back)
    assert booked[(f"reversal:{ref}", L.CUSTOMERS)] == (Decimal("-5.0000"), "EUR")
    assert booked[(f"reversal:{ref}", L.REVENUE)] == (Decimal("5.0000"), "EUR")
    assert booked[(f"reversal:{ref}", L.COST_OF_SALES)] == (Decimal("-4.5000"), "EUR")
    assert booked[(f"reversal:{ref}", L.PROVIDER_FLOAT)] == (Decimal("4.5000"), "EUR")
    (row,) = margin_report(by="reseller")
    assert (row["sales"], row["revenue"], row["cost"], row["margin"]) == (
        1,
        Decimal("5.0000"),
        Decimal("4.5000"),
        kept.margin,
    )
    assert_books_right()
    assert_ledger_balanced()


def test_provider_float_is_funded_less_costs_plus_reversals(product):
    assert cli("fund_provider", "--provider", "sim-a", "--amount", "100").endswith("float 100.0000")
    _first, second = place(product, quantity=2)
    recharge_reverse(recharge_id=second.pk, source="test")
    assert provider_floats()["sim-a"] == {"EUR": Decimal("95.5000")}  # 100 - 4.50 - 4.50 + 4.50
    with pytest.raises(CommandError, match="no provider named"):
        cli("fund_provider", "--provider", "nobody", "--amount", "10")
    with pytest.raises(CommandError, match="not a number"):
        cli("fund_provider", "--provider", "sim-a", "--amount", "ten")
    assert_books_right()


def test_the_margin_report_groups_by_day_operator_country_and_reseller(product):
    user = UserFactory()
    place(product, quantity=3, user=user)
    today = timezone.now().date()
    (day,) = margin_report(by="day")
    assert (day["key"], day["sales"], day["margin"]) == (today, 3, Decimal("1.5000"))
    assert margin_report(by="operator")[0]["key"] == product.operator_id
    assert margin_report(by="country")[0]["key"] == product.country_id
    assert margin_report(by="reseller")[0]["key"] == user.account.pk
    tomorrow = timezone.now() + timedelta(days=1)
    assert margin_report(by="day", since=tomorrow) == []


def test_a_delivery_through_airtime_provider_books_the_simulators_cost():
    """No provider row sells it: the simulator of AIRTIME_PROVIDER, by the same path, costs
    AIRTIME_SIMULATOR_COST_PERCENT (92) of the price, booked like any provider's cost."""
    product = ProductFactory(retail_price=Decimal("5.00"))
    (recharge,) = place(product)
    assert recharge.status == S.DELIVERED and recharge.provider == "simulator"
    ref = recharge.public_id
    assert lines(recharge) == {
        (f"sale:{ref}", L.CUSTOMERS): (Decimal("5.0000"), "EUR"),
        (f"sale:{ref}", L.REVENUE): (Decimal("-5.0000"), "EUR"),
        (f"cost:{ref}", L.COST_OF_SALES): (Decimal("4.6000"), "EUR"),
        (f"cost:{ref}", L.PROVIDER_FLOAT): (Decimal("-4.6000"), "EUR"),
    }
    assert recharge.margin == Decimal("0.40")
    assert_books_right()


def test_check_books_finds_a_missing_sale_an_unbalanced_journal_and_a_stray_line(product):
    (recharge,) = place(product)
    assert_books_right()
    Entry.objects.filter(reference=recharge.public_id, ledger=L.CUSTOMERS).delete()
    Entry.objects.create(
        journal="sale:rch_nobody", kind=K.SALE, ledger=L.REVENUE, amount=Decimal("-1"),
        currency="EUR", reporting_amount=Decimal("-1"), reporting_currency="EUR",
        reference="rch_nobody",
    )  # fmt: skip
    problems = books_check()
    assert f"{recharge.public_id}: no sale line on customers" in problems
    assert any(
        p.startswith(f"journal sale:{recharge.public_id} does not balance") for p in problems
    )
    assert "rch_nobody: booked, but not a delivered or reversed recharge" in problems
    with pytest.raises(CommandError, match="problem"):
        cli("check_books")


@settings(
    max_examples=12,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    steps=st.lists(
        st.tuples(
            st.sampled_from(["order", "refused", "reverse"]), st.integers(min_value=1, max_value=3)
        ),
        min_size=1,
        max_size=6,
    )
)
def test_the_books_balance_after_any_sequence_of_sales_failures_and_reversals(product, steps):
    for action, count in steps:
        if action == "order":
            place(product, quantity=count)
        elif action == "refused":
            place(product, number="+525512349990", quantity=count)
        else:
            for recharge in Recharge.objects.filter(status=S.DELIVERED).order_by("?")[:count]:
                recharge_reverse(recharge_id=recharge.pk, source="test")
    assert_books_right()
    assert_ledger_balanced()
    delivered = Recharge.objects.filter(status=S.DELIVERED)
    expected = sum((r.margin for r in delivered), Decimal(0))
    assert sum((row["margin"] for row in margin_report(by="provider")), Decimal(0)) == expected


@settings(max_examples=200, deadline=None)
@given(
    price=st.decimals(min_value="0.01", max_value="9999.99", places=2),
    cost=st.decimals(min_value="0.0001", max_value="9999.9999", places=4),
    rate=st.decimals(min_value="0.0001", max_value="99999", places=6),
)
def test_margin_is_the_price_less_the_cost_converted_to_the_cent(price, cost, rate):
    """Across currencies: the cost converted with the FX table is rounded half up to the
    cent, and price = margin + converted cost exactly."""
    with transaction.atomic():
        fx_rate_set(base_currency="USD", quote_currency="EUR", rate=rate)
        recharge = Recharge(amount=price, currency="EUR")
        margin = processor.margin_of(recharge, cost=cost, cost_currency="USD")
        converted, _quote = fx_convert(amount=cost, from_currency="USD", to_currency="EUR")
        transaction.set_rollback(True)
    assert margin is not None and margin == margin.quantize(Decimal("0.01"))
    assert converted == (cost * rate).quantize(Decimal("0.01"), rounding="ROUND_HALF_UP")
    assert margin + converted == price


@pytest.fixture
def staff_client(staff):
    client = Client()
    second_factor_login(client, staff)
    return client


def test_the_margin_page_groups_the_books_and_exports_them(product, staff_client):
    place(product, quantity=2)
    page = staff_client.get("/admin/margin/?by=provider&days=30")
    assert page.status_code == 200
    html = page.content.decode()
    assert "sim-a" in html and "1.00 EUR" in html  # 2 sales of 0.50
    exported = staff_client.get("/admin/margin/?by=provider&days=30&format=csv")
    text = b"".join(exported.streaming_content).decode()
    assert text.splitlines()[1] == "sim-a,EUR,2,10.00,9.00,1.00,10.0"
    xlsx = staff_client.get("/admin/margin/?by=operator&days=7&format=xlsx")
    assert xlsx["Content-Type"].startswith("application/vnd.openxmlformats")
    # An unknown grouping or period falls back to the defaults rather than failing.
    assert staff_client.get("/admin/margin/?by=nonsense&days=abc").status_code == 200
    dashboard = staff_client.get("/admin/dashboard/").content.decode()
    assert "cost and margin" in dashboard and "/admin/margin/" in dashboard


def test_the_margin_page_is_staff_only(client, user):
    client.force_login(user)
    assert client.get("/admin/margin/").status_code == 302
