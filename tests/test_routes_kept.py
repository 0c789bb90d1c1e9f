"""The routes the processor chooses among, kept briefly in each process (upstreams/cache.py):
a second batch of the same product reads no routes, yet every change to a provider or its
routes, made by this process or another, is followed from the very next batch."""

from __future__ import annotations

import os
import subprocess
import sys
from decimal import Decimal
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext

from recharges import processor
from recharges.models import Recharge
from tests.factories import ProductFactory
from tests.helpers import assert_ledger_balanced, database_url, funded_order, table_reads
from tests.provider_support import two_simulators
from upstreams.models import Provider, Route
from upstreams.services import catalog_sync, provider_balance_refresh

pytestmark = pytest.mark.django_db
S = Recharge.Status
ROOT = Path(__file__).resolve().parent.parent


def _route_reads(queries) -> list[str]:
    return table_reads(queries, "upstreams_route")


@pytest.fixture
def product():
    """Sold by two simulator accounts: "sim-a" the cheaper, "sim-b" the other."""
    product = ProductFactory(retail_price=Decimal("5.00"))
    two_simulators(product, cost_a="90", cost_b="95")
    return product


def place(product, quantity=1) -> list[Recharge]:
    return list(funded_order(product, quantity=quantity).recharges.order_by("id"))


def _sent_to(recharge) -> str:
    assert processor.recharge_process(recharge_id=recharge.pk).status == S.DELIVERED
    recharge.refresh_from_db()
    return recharge.provider


def test_a_second_batch_of_the_same_product_reads_no_routes(product):
    first, second = place(product, quantity=2)
    assert _sent_to(first) == "sim-a"
    with CaptureQueriesContext(connection) as queries:
        assert _sent_to(second) == "sim-a"
    assert _route_reads(queries.captured_queries) == []
    assert_ledger_balanced()


def test_a_provider_staff_disable_is_skipped_from_the_next_batch(product):
    first, second = place(product, quantity=2)
    assert _sent_to(first) == "sim-a"
    call_command("set_provider", "--name", "sim-a", "--enabled", "false", stdout=StringIO())
    assert _sent_to(second) == "sim-b"
    assert_ledger_balanced()


def test_routes_a_sync_removes_are_left_from_the_next_batch(product):
    """The sync deactivates the routes it no longer finds in one ``update()``, which sends no
    signal, and stamps its provider with a save that keeps the version (``synced_at`` only):
    it renews the routes' version itself."""
    first, second = place(product, quantity=2)
    assert _sent_to(first) == "sim-a"
    # Asked for Spain only, the simulator offers nothing of Mexico's: sim-a's routes go.
    result = catalog_sync(provider=Provider.objects.get(name="sim-a"), countries=["ES"])
    assert result.removed == 1
    assert _sent_to(second) == "sim-b"
    assert_ledger_balanced()


def test_a_route_saved_or_deleted_is_followed_from_the_next_batch(product, settings):
    """Any save or delete the ORM reports renews the version, whoever makes it."""
    first, second, third = place(product, quantity=3)
    assert _sent_to(first) == "sim-a"
    route = Route.objects.get(product=product, provider__name="sim-a")
    route.active = False
    route.save(update_fields=["active"])
    assert _sent_to(second) == "sim-b"
    Route.objects.get(product=product, provider__name="sim-b").delete()
    # No provider row sells it now: it goes to AIRTIME_PROVIDER (contract section 14).
    assert _sent_to(third) == settings.AIRTIME_PROVIDER


def test_a_balance_check_that_finds_the_same_balance_keeps_the_routes(product):
    """The balance task saves every provider every minute: a balance that did not move (the
    simulator's) leaves the kept routes as they are; the route's provider still has it."""
    for provider in Provider.objects.all():  # the balances read a first time
        provider_balance_refresh(provider=provider)
    first, second = place(product, quantity=2)
    assert _sent_to(first) == "sim-a"
    for provider in Provider.objects.all():  # and again: the same
        provider_balance_refresh(provider=provider)
    with CaptureQueriesContext(connection) as queries:
        assert _sent_to(second) == "sim-a"
    assert _route_reads(queries.captured_queries) == []
    assert Provider.objects.get(name="sim-a").balance == Decimal("1000000.00")


def test_without_a_shared_cache_every_batch_reads_the_routes(product, settings):
    """Without Redis each process would have a version of its own, blind to another
    process's changes: no copy is kept then."""
    settings.REDIS_URL = ""
    first, second = place(product, quantity=2)
    assert _sent_to(first) == "sim-a"
    with CaptureQueriesContext(connection) as queries:
        assert _sent_to(second) == "sim-a"
    assert _route_reads(queries.captured_queries)


# Another process disables the provider (staff on the CLI of another host): this process,
# which keeps its routes, sends the next recharge elsewhere at once.
DISABLE = """
import sys
import django

django.setup()
from django.core.management import call_command

call_command("set_provider", "--name", sys.argv[1], "--enabled", "false")
"""


@pytest.mark.django_db(transaction=True)
def test_a_provider_disabled_by_another_process_is_skipped_from_the_next_batch(product, settings):
    """Committed here, each order's recharge is processed in this process once it commits
    (the tasks of the embedded default)."""
    (first,) = place(product)
    first.refresh_from_db()
    assert (first.status, first.provider) == (S.DELIVERED, "sim-a")
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "reseller.settings.test",
        "DATABASE_URL": database_url(),
        "TEST_CACHE_KEY_PREFIX": settings.CACHES["default"]["KEY_PREFIX"],
    }
    subprocess.run(
        [sys.executable, "-c", DISABLE, "sim-a"], cwd=ROOT, env=env, check=True, timeout=60
    )
    (second,) = place(product)
    second.refresh_from_db()
    assert (second.status, second.provider) == (S.DELIVERED, "sim-b")
    assert_ledger_balanced()
