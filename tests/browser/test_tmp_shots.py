from decimal import Decimal

import pytest
from django.conf import settings as dj
from django.test import Client
from django.test import override_settings

from recharges.services import recharge_reverse
from tests.helpers import second_factor_login
from tests.test_books import place, cli
from tests.factories import ProductFactory, UserFactory
from upstreams.models import Provider
from upstreams.routing import routing_forget
from upstreams.services import catalog_sync

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.browser]


def test_shots(site, browser, staff):
    routing_forget()
    product = ProductFactory(retail_price=Decimal("5.00"))
    cli("create_provider", "--name", "sim-a", "--kind", "simulator", "--currency", "EUR")
    with override_settings(AIRTIME_SIMULATOR_COST_PERCENT=90):
        catalog_sync(provider=Provider.objects.get(name="sim-a"))
    routing_forget()
    cli("fund_provider", "--provider", "sim-a", "--amount", "500")
    user = UserFactory()
    recharges = place(product, quantity=3, user=user)
    recharge_reverse(recharge_id=recharges[0].pk, source="test")
    staff_client = Client()
    second_factor_login(staff_client, staff)
    staff_cookie = staff_client.cookies[dj.SESSION_COOKIE_NAME].value
    user_client = Client()
    user_client.force_login(user)
    user_cookie = user_client.cookies[dj.SESSION_COOKIE_NAME].value
    host = site.url.split("//")[1].split(":")[0]
    pages = [
        ("margin", "/admin/margin/?by=provider", staff_cookie),
        ("dashboard", "/admin/dashboard/", staff_cookie),
        ("receipt", f"/payments/{recharges[0].payment.public_id}/", user_cookie),
    ]
    for lang in ("en", "es"):
        for width in (1280, 390):
            context = browser.new_context(viewport={"width": width, "height": 900})
            context.add_cookies([
                {"name": dj.SESSION_COOKIE_NAME, "value": "x", "domain": host, "path": "/"},
                {"name": "django_language", "value": lang, "domain": host, "path": "/"},
            ])
            for name, path, cookie in pages:
                context.add_cookies([{"name": dj.SESSION_COOKIE_NAME, "value": cookie, "domain": host, "path": "/"}])
                tab = context.new_page()
                tab.goto(site.url + path)
                tab.screenshot(path=f"/tmp/shots/{name}-{lang}-{width}.png", full_page=True)
                tab.close()
            context.close()
