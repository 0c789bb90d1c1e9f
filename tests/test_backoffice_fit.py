"""Issue 43, item 8, as the server renders it: the recharges and providers lists show what
staff need in compact rows (the browser test, tests/browser/test_backoffice_fit.py, checks
they fit at 1280 px), and the rest is on each row's page."""

from __future__ import annotations

import re
from decimal import Decimal

import pytest
from django.test import Client

from tests.factories import ProductFactory, UserFactory
from tests.helpers import REJECTS, fund, place, process, second_factor_login

pytestmark = pytest.mark.django_db


def staff_client(language: str = "en") -> Client:
    client = Client()
    second_factor_login(client, UserFactory(is_staff=True, is_superuser=True))
    client.cookies["django_language"] = language
    return client


def text_of(html: str) -> str:
    html = html.replace("<wbr>", "")  # a break opportunity, not a space
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html))


def rows_of(html: str) -> list[str]:
    body = html.split('<table id="result_list"', 1)[1].split("</table>", 1)[0]
    return [text_of(row).strip() for row in re.findall(r"<tr[^>]*>(.*?)</tr>", body, re.S)[1:]]


def test_each_recharge_row_shows_id_date_account_number_operator_amount_status_and_provider():
    shop = UserFactory(account__name="Kiosco Central")
    fund(shop, "100.00")
    product = ProductFactory(retail_price=Decimal("5.00"))
    delivered = place(shop, product, quantity=1)
    failed = place(shop, product, number=REJECTS)
    process(delivered)
    process(failed)
    html = staff_client().get("/admin/recharges/recharge/").content.decode()
    headers = re.findall(r'<th scope="col" class="[^"]*column-(\w+)', html)
    assert headers == ["recharge_shown", "account_shown", "recipient_shown", "amount_shown",
                       "status_shown"]  # fmt: skip
    listed = rows_of(html)
    assert listed[0].split()[0] == failed.recharges.get().public_id  # the newest first
    rows = {row.split()[0]: row for row in listed}
    ok = rows[delivered.recharges.get().public_id]
    operator = f"{product.operator.name} ({product.country_id})"
    for shown in ("Kiosco Central", "+525512345678", operator, "5.00 EUR", "Delivered",
                  "via simulator"):  # fmt: skip
        assert shown in ok, shown
    refused = rows[failed.recharges.get().public_id]
    assert "Failed" in refused and "invalid_recipient" in refused


def test_the_rest_of_a_recharge_is_on_its_page():
    shop = UserFactory()
    fund(shop, "10.00")
    order = place(shop, ProductFactory(), number=REJECTS)
    process(order)
    recharge = order.recharges.get()
    said = text_of(
        staff_client().get(f"/admin/recharges/recharge/{recharge.pk}/change/").content.decode()
    )
    for label in ("Failure message", "Refunded", "Retries", "Live mode", "Provider", "Cost"):
        assert label in said, label


def test_the_providers_list_shows_health_at_a_glance_and_the_page_every_figure():
    from io import StringIO

    from django.core.management import call_command

    from upstreams.models import Provider

    call_command("create_provider", "--name", "sim-a", "--kind", "simulator", stdout=StringIO())
    call_command("set_provider", "--name", "sim-a", "--enabled", "false", stdout=StringIO())
    client = staff_client()
    html = client.get("/admin/upstreams/provider/").content.decode()
    headers = re.findall(r'<th scope="col" class="[^"]*column-(\w+)', html)
    assert headers == ["provider_shown", "state", "balance_listed", "success_rate", "latency",
                       "in_flight", "routes"]  # fmt: skip
    assert 'id="changelist-filter"' not in html  # the room it took is the columns'
    (row,) = rows_of(html)
    assert "sim-a" in row and "Simulator (built in) · priority 100" in row and "disabled" in row
    pk = Provider.objects.get(name="sim-a").pk
    page = text_of(client.get(f"/admin/upstreams/provider/{pk}/change/").content.decode())
    for label in ("Health, last 15 minutes", "State", "Success", "P50/p95 ms", "In flight",
                  "Routes", "Balance at the provider", "Float in our books"):  # fmt: skip
        assert label in page, label
