"""The fakes of Reloadly, DT One and DingConnect as fixtures, a catalog routed through
them (every test module gets these through ``tests/conftest.py``), two simulator
accounts selling one product (``two_simulators``), and a top-up of the Reloadly fake's Telcel
100 MXN as the processor hands it to an adapter (``telcel_topup``).

Telcel 100 MXN costs 4.88 EUR less 6.5% at Reloadly (4.56 EUR), 5.40 + 0.10 USD at DT One
(5.00 EUR at 1.10) and 6.00 USD less commission at Ding: that is the order of its routes."""

from decimal import Decimal
from io import StringIO

import pytest
from django.core.management import call_command
from django.test import override_settings

from catalog.services import fx_rate_set
from tests.factories import OperatorFactory
from tests.fakes.ding import FakeDing
from tests.fakes.dtone import FakeDTOne
from tests.fakes.reloadly import FakeReloadly
from upstreams.adapters.base import TopupRequest
from upstreams.models import Provider, Route
from upstreams.services import catalog_sync

NUMBER = "+525512345678"


def telcel_topup(reference: str) -> TopupRequest:
    """Telcel (the Reloadly fake's operator 341) 100 MXN to a Mexican number."""
    return TopupRequest(
        reference=reference,
        recipient_number="+5215512345678",
        country="MX",
        operator_id="341",
        product_id="prd_1",
        amount=Decimal("100.00"),
        currency="MXN",
    )


@pytest.fixture(name="reloadly")
def reloadly_fixture():
    server = FakeReloadly().start()
    yield server
    server.stop()


@pytest.fixture(name="dtone")
def dtone_fixture():
    server = FakeDTOne().start()
    yield server
    server.stop()


@pytest.fixture(name="ding")
def ding_fixture():
    server = FakeDing().start()
    yield server
    server.stop()


def _cli(*args) -> str:
    out = StringIO()
    call_command(*args, stdout=out)
    return out.getvalue().strip()


def two_simulators(product, *, cost_a="92", cost_b="92", priority_a=1, priority_b=2):
    """Two simulator accounts selling ``product``, synced with their own cost shares."""
    _cli("create_provider", "--name", "sim-a", "--kind", "simulator", "--priority", str(priority_a))
    _cli("create_provider", "--name", "sim-b", "--kind", "simulator", "--priority", str(priority_b))
    for name, share in (("sim-a", cost_a), ("sim-b", cost_b)):
        with override_settings(AIRTIME_SIMULATOR_COST_PERCENT=int(share)):
            catalog_sync(provider=Provider.objects.get(name=name))
    return Route.objects.filter(product=product)


@pytest.fixture(name="routed")
def routed_fixture(reloadly, dtone, ding):
    """Our catalog's Telcel and AT&T (Mexico), the three providers created and synced."""
    fx_rate_set(base_currency="EUR", quote_currency="USD", rate=Decimal("1.10"))
    telcel = OperatorFactory(slug="telcel", name="Telcel")
    att = OperatorFactory(slug="att", name="AT&T", carrier_names=["AT&T", "Iusacell"])
    _cli(
        "create_provider", "--name", "reloadly-1", "--kind", "reloadly",
        "--base-url", reloadly.url, "--auth-url", reloadly.url,
        "--client-id", "client-1", "--client-secret", "secret-1",
    )  # fmt: skip
    _cli(
        "create_provider", "--name", "dtone-1", "--kind", "dtone", "--base-url", dtone.url,
        "--api-key", dtone.api_key, "--api-secret", dtone.api_secret, "--currency", "USD",
    )  # fmt: skip
    _cli(
        "create_provider", "--name", "ding-1", "--kind", "ding", "--base-url", ding.url,
        "--api-key", ding.api_key, "--currency", "USD",
    )  # fmt: skip
    lines = {
        name: _cli("sync_provider_catalog", "--provider", name, "--country", "MX")
        for name in ("reloadly-1", "dtone-1", "ding-1")
    }
    yield {"telcel": telcel, "att": att, "lines": lines}


def telcel_100(routed):
    return Route.objects.get(
        provider__name="dtone-1", product__operator=routed["telcel"], product__local_amount=100
    ).product
