"""The products an order asks for, kept briefly in each process (catalog/cache.py): a second
order reads no catalog rows, yet every change to the catalog, made by this process or
another, is charged from the very next request; promotions start and end on time."""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import timedelta
from decimal import Decimal
from pathlib import Path

import pytest
import time_machine
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from catalog import cache
from catalog.services import product_set_active, product_upsert
from orders.models import OrderLine
from recharges import processor
from tests.factories import PromotionFactory, make_key
from tests.helpers import (
    assert_ledger_balanced,
    assert_problem,
    client_for,
    database_url,
    fund,
    place,
    table_reads,
)
from tests.waiting import wait_until
from wallet.services import wallet_topup_manual

pytestmark = pytest.mark.django_db

B2B = "/api/v1/api-access/b2b/recharges"
ROOT = Path(__file__).resolve().parent.parent


def _order(client, product, key: str):
    return client.post(
        B2B,
        {
            "items": [
                {"productId": product.public_id, "recipientNumber": "+525512345678", "quantity": 1}
            ],
            "baseCurrency": "EUR",
        },
        HTTP_IDEMPOTENCY_KEY=key,
    )


@pytest.fixture
def shop(reseller):
    wallet_topup_manual(account=reseller.account, amount=Decimal("100.00"))
    _key, plaintext = make_key(reseller, mode="live")
    return client_for(plaintext)


def _catalog_reads(queries) -> list[str]:
    return table_reads(queries, "catalog_product", "catalog_promotion")


def _price_change(product, price: str):
    return product_upsert(
        sku=product.sku,
        operator=product.operator,
        name=product.name,
        local_amount=product.local_amount,
        local_currency=product.local_currency,
        retail_price=Decimal(price),
    )


def test_a_second_order_of_the_same_product_reads_no_catalog_rows(shop, product):
    assert _order(shop, product, "first").status_code == 201
    with CaptureQueriesContext(connection) as queries:
        response = _order(shop, product, "second")
    assert response.status_code == 201, response.content
    assert response.json()["total"] == "5.00"
    assert _catalog_reads(queries.captured_queries) == []


def test_a_price_change_is_charged_from_the_next_order(shop, product):
    assert _order(shop, product, "before").json()["total"] == "5.00"
    _price_change(product, "7.00")
    response = _order(shop, product, "after")
    assert response.status_code == 201, response.content
    assert response.json()["total"] == "7.00"
    assert_ledger_balanced()


def test_a_product_switched_off_is_refused_from_the_next_order(shop, product):
    assert _order(shop, product, "before").status_code == 201
    assert product_set_active(products=[product], active=False) == 1  # one UPDATE, no signal
    assert_problem(_order(shop, product, "after"), 400, "validation_error")


def test_a_new_promotion_applies_from_the_next_order(shop, product):
    assert _order(shop, product, "before").status_code == 201
    promotion = PromotionFactory(operator=product.operator, products=[product])
    assert _order(shop, product, "after").status_code == 201
    names = list(OrderLine.objects.order_by("id").values_list("promotion_name", flat=True))
    assert names == ["", promotion.name]


def test_a_kept_promotion_ends_on_time_without_reading_the_catalog_again(shop, product):
    end = timezone.now() + timedelta(hours=2)
    promotion = PromotionFactory(operator=product.operator, ends_at=end)
    assert _order(shop, product, "running").status_code == 201
    with (
        time_machine.travel(end + timedelta(seconds=1), tick=False),
        CaptureQueriesContext(connection) as queries,
    ):
        assert _order(shop, product, "ended").status_code == 201
    assert _catalog_reads(queries.captured_queries) == []
    names = list(OrderLine.objects.order_by("id").values_list("promotion_name", flat=True))
    assert names == [promotion.name, ""]


def test_a_change_no_signal_reports_is_seen_once_the_age_limit_passes(shop, product, settings):
    settings.CATALOG_CACHE_SECONDS = 300
    assert _order(shop, product, "before").json()["total"] == "5.00"
    with connection.cursor() as cursor:  # as a hand-written UPDATE in psql would
        cursor.execute("UPDATE catalog_product SET retail_price = 9 WHERE id = %s", [product.pk])
    assert _order(shop, product, "kept").json()["total"] == "5.00"
    # The age limit is read at each use: lowered only now, so a slow box cannot age the copy
    # between the two orders above.
    settings.CATALOG_CACHE_SECONDS = 1
    wait_until(  # the process's copy reaches the age limit (monotonic: no clock to move)
        lambda: not cache.products.get({product.public_id}, version=cache.products.version()),
        timeout=5,
        what="the kept copy of the product to pass CATALOG_CACHE_SECONDS",
    )
    assert _order(shop, product, "aged").json()["total"] == "9.00"


def test_without_a_shared_cache_every_order_reads_the_catalog(shop, product, settings):
    """Without Redis each process would have a version of its own, blind to another
    process's changes: no copy is kept then."""
    settings.REDIS_URL = ""
    _order(shop, product, "first")
    with CaptureQueriesContext(connection) as queries:
        assert _order(shop, product, "second").status_code == 201
    assert _catalog_reads(queries.captured_queries)


def test_with_the_cache_off_every_order_reads_the_catalog(shop, product, settings):
    settings.CATALOG_CACHE_SECONDS = 0
    _order(shop, product, "first")
    with CaptureQueriesContext(connection) as queries:
        assert _order(shop, product, "second").status_code == 201
    assert _catalog_reads(queries.captured_queries)


# Another process changes the price (a staff member in the back office, on another gunicorn
# worker): this process, which keeps the product, charges the new price at once.
CHANGE = """
import sys
from decimal import Decimal
import django

django.setup()
from catalog.models import Product
from catalog.services import product_upsert

product = Product.objects.get(public_id=sys.argv[1])
product_upsert(
    sku=product.sku, operator=product.operator, name=product.name,
    local_amount=product.local_amount, local_currency=product.local_currency,
    retail_price=Decimal(sys.argv[2]),
)
"""


@pytest.mark.django_db(transaction=True)
def test_a_price_changed_by_another_process_is_charged_from_the_next_order(shop, product, settings):
    assert _order(shop, product, "before").json()["total"] == "5.00"
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "reseller.settings.test",
        "DATABASE_URL": database_url(),
        "TEST_CACHE_KEY_PREFIX": settings.CACHES["default"]["KEY_PREFIX"],
    }
    subprocess.run(
        [sys.executable, "-c", CHANGE, product.public_id, "6.50"],
        cwd=ROOT,
        env=env,
        check=True,
        timeout=60,
    )
    response = _order(shop, product, "after")
    assert response.status_code == 201, response.content
    assert response.json()["total"] == "6.50"
    assert_ledger_balanced()


# The processor asks, for every recharge, whether a scheduled promotion should hold it.


def _two_recharges(reseller, product):
    fund(reseller, "20.00")
    return list(place(reseller, product, quantity=2).recharges.order_by("id"))


def test_the_processor_reads_no_promotions_for_a_product_it_keeps(reseller, product):
    first, second = _two_recharges(reseller, product)
    assert processor.recharge_process(recharge_id=first.pk).status == "delivered"
    with CaptureQueriesContext(connection) as queries:
        outcome = processor.recharge_process(recharge_id=second.pk)
    assert outcome.status == "delivered"
    assert _catalog_reads(queries.captured_queries) == []


def test_a_promotion_scheduled_after_the_product_was_kept_holds_the_next_recharge(
    reseller, product
):
    first, second = _two_recharges(reseller, product)
    assert processor.recharge_process(recharge_id=first.pk).status == "delivered"
    starts = timezone.now() + timedelta(hours=24)
    PromotionFactory(
        operator=product.operator, starts_at=starts, ends_at=starts + timedelta(days=1)
    )
    assert processor.recharge_process(recharge_id=second.pk).status == ("waitlisted")
