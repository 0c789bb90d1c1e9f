"""The staff dashboard: server-rendered SVG charts inside the admin, with and without data."""

from __future__ import annotations

import re
from decimal import Decimal
from xml.etree import ElementTree

import pytest
from django.test import Client

from backoffice import charts, selectors
from tests.factories import CountryFactory, OperatorFactory, ProductFactory, UserFactory
from tests.helpers import REJECTS, fund, place, process, second_factor_login

pytestmark = pytest.mark.django_db

URL = "/admin/dashboard/"


@pytest.fixture
def client(staff) -> Client:
    client = Client()
    second_factor_login(client, staff)
    return client


def svgs(html: str) -> list[ElementTree.Element]:
    """Every chart parses as XML (well-formed SVG)."""
    return [
        ElementTree.fromstring(m) for m in re.findall(r"<svg class=\"chart\".*?</svg>", html, re.S)
    ]


def test_the_dashboard_renders_without_data(client):
    response = client.get(URL)
    assert response.status_code == 200
    html = response.content.decode()
    assert len(svgs(html)) == 6  # sales, cost and margin, recharges, statuses, ...
    assert "No sales in the last 30 days" in html and "No recharges yet" in html


def test_the_dashboard_renders_charts_of_the_data(client):
    shop = UserFactory()
    fund(shop, "500.00")
    mx = ProductFactory(retail_price=Decimal("5.00"))
    colombia = CountryFactory(code="CO", name="Colombia", calling_code="+57", currency="COP")
    co = ProductFactory(
        operator=OperatorFactory(country=colombia, name="Claro <CO>"), retail_price=Decimal("10.00")
    )
    process(place(shop, mx, quantity=3))
    process(place(shop, mx, number=REJECTS))
    process(place(shop, co, number="+573001234567", quantity=2))
    place(shop, co, number="+573001234567")

    html = client.get(URL).content.decode()
    charts_ = svgs(html)
    assert len(charts_) == 6
    bars = [rect for svg in charts_ for rect in svg.iter("{http://www.w3.org/2000/svg}rect")]
    titles = [t.text for rect in bars for t in rect.iter("{http://www.w3.org/2000/svg}title")]
    assert any("Sales 50.00 EUR" in t for t in titles)  # 15 + 5 + 20 + 10 today
    assert any("delivered 5" in t for t in titles)
    assert any(t.startswith("Failed: 1") for t in titles)
    assert any(t.startswith("Colombia: 3") for t in titles)
    assert any("75% of 4" in t for t in titles)  # the Mexican operator: 3 of 4 delivered
    assert "Claro &lt;CO&gt;" in html and "Claro <CO>" not in html  # labels are escaped
    assert "50.00 EUR" in html  # sales card


def test_the_dashboard_is_linked_from_the_admin_index(client):
    assert URL in client.get("/admin/").content.decode()


def test_the_dashboard_is_for_staff_only(user):
    anonymous = Client()
    response = anonymous.get(URL)
    assert response.status_code == 302 and "/admin/login/" in response["Location"]
    client = Client()
    client.force_login(user)
    assert client.get(URL).status_code == 302


def test_the_dashboard_series_cover_every_day_and_count_live_data_only(client):
    from tests.helpers import sandbox_order

    sandbox_order(UserFactory(), ProductFactory(), quantity=2)
    data = selectors.dashboard(days=30)
    assert len(data["series"]) == 30 and data["series"][-1].day == selectors.start_of_today().date()
    assert data["sales_total"] == Decimal("0.00") and data["recharges_total"] == 0


def test_the_dashboard_runs_a_fixed_number_of_queries(client, django_assert_max_num_queries):
    shop = UserFactory()
    fund(shop, "500.00")
    product = ProductFactory()
    process(place(shop, product, quantity=2))
    client.get(URL)
    with django_assert_max_num_queries(30) as few:
        client.get(URL)
    for n in range(3):
        other = UserFactory()
        fund(other, "50.00")
        process(place(other, ProductFactory(), number=REJECTS if n else "+525512345678"))
    with django_assert_max_num_queries(len(few.captured_queries)):
        client.get(URL)


@pytest.mark.parametrize(
    ("value", "top", "step"), [(0, 1.0, 0.25), (7, 8, 2), (95, 100, 20), (1234.5, 1500, 500)]
)
def test_chart_axes_round_up_to_nice_numbers(value, top, step):
    assert charts.nice_max(value) == (top, step)


def test_charts_escape_labels_and_show_an_empty_state():
    svg = charts.bar_chart(bars=[charts.Bar(label="<script>", value=1, text="1")], label="x")
    assert "<script>" not in svg and "&lt;script&gt;" in svg
    empty = charts.column_chart(
        labels=["a"], series=[charts.Series("s", "#000")], values=[[0]], label="y", empty="Nothing"
    )
    assert "Nothing" in empty
