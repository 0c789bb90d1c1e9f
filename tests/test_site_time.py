"""Dates and times on the site's pages (issue 17): one style, in the visitor's language and
time zone (the browser's, kept in the ``tz`` cookie by reseller/static/js/timezone.js); UTC until
it is known; the API always in UTC."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal

import pytest
import time_machine

from tests.factories import ProductFactory, UserFactory
from tests.helpers import bearer, fund, place

pytestmark = pytest.mark.django_db

PAID_AT = datetime(2026, 1, 15, 23, 30, tzinfo=UTC)


@pytest.fixture
def order():
    user = UserFactory()
    fund(user, "20.00")
    with time_machine.travel(PAID_AT, tick=False):
        return place(user, ProductFactory(retail_price=Decimal("5.00")))


def receipt(client, order, **headers) -> str:
    client.force_login(order.created_by)
    page = client.get(f"/payments/{order.payment.public_id}/", **headers)
    assert page.status_code == 200
    return page.content.decode()


def test_times_are_shown_in_the_browsers_time_zone_and_language(client, order):
    client.cookies["tz"] = "Europe/Madrid"
    html = receipt(client, order, HTTP_ACCEPT_LANGUAGE="es")
    # 23:30 UTC is half past midnight the next day in Madrid (CET, UTC+1).
    assert (
        '<time datetime="2026-01-15T23:30:00+00:00">16 de enero de 2026 a las 00:30 CET</time>'
        in html
    )
    history = client.get("/payments/", HTTP_ACCEPT_LANGUAGE="es").content.decode()
    assert "16 de enero de 2026 a las 00:30 CET" in history


def test_without_a_known_zone_times_are_utc_and_say_so(client, order):
    assert "Jan. 15, 2026, 11:30 p.m. UTC" in receipt(client, order)
    client.cookies["tz"] = "Mars/Olympus_Mons"
    assert "Jan. 15, 2026, 11:30 p.m. UTC" in receipt(client, order)
    client.cookies["tz"] = "../../etc/passwd"
    assert "Jan. 15, 2026, 11:30 p.m. UTC" in receipt(client, order)


def test_the_api_answers_in_utc_whatever_the_cookie(api, order):
    api.cookies["tz"] = "Asia/Tokyo"
    body = api.get(f"/api/v1/payments/{order.payment.public_id}", **bearer(order.created_by))
    assert body.status_code == 200
    assert body.json()["createdAt"] == "2026-01-15T23:30:00Z"


def test_every_page_loads_the_time_zone_script(client):
    assert "/static/js/timezone.js" in client.get("/").content.decode()
