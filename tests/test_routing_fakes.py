"""Routing and failover against the fakes of DT One and DingConnect over real HTTP
(docs/providers.md): the catalog sync maps their operators and makes routes, the cheapest one
is used, a refused connection or a documented refusal fails over, a timeout never does."""

from decimal import Decimal
from io import StringIO

import pytest
from django.core.management import call_command
from django.db import transaction
from django.test import override_settings

from catalog.services import fx_rate_set
from orders.pricing import LineRequest
from orders.services import order_place_with_wallet
from recharges import processor
from recharges.models import Recharge, RechargeAttempt
from tests.factories import OperatorFactory, UserFactory
from tests.fakes.ding import FakeDing
from tests.fakes.dtone import FakeDTOne
from tests.helpers import assert_ledger_balanced
from upstreams import health
from upstreams.models import Provider, ProviderOperator, Route
from upstreams.routing import routing_forget
from wallet.models import Wallet
from wallet.services import wallet_get_or_create, wallet_topup_manual

pytestmark = pytest.mark.django_db
S = Recharge.Status
NUMBER = "+525512345678"


@pytest.fixture
def dtone():
    server = FakeDTOne().start()
    yield server
    server.stop()


@pytest.fixture
def ding():
    server = FakeDing().start()
    yield server
    server.stop()


def cli(*args) -> str:
    out = StringIO()
    call_command(*args, stdout=out)
    return out.getvalue().strip()


@pytest.fixture
def routed(dtone, ding):
    """Our catalog's Telcel and AT&T (Mexico), both providers created and synced."""
    fx_rate_set(base_currency="EUR", quote_currency="USD", rate=Decimal("1.10"))
    telcel = OperatorFactory(slug="telcel", name="Telcel")
    att = OperatorFactory(slug="att", name="AT&T", carrier_names=["AT&T", "Iusacell"])
    cli(
        "create_provider", "--name", "dtone-1", "--kind", "dtone", "--base-url", dtone.url,
        "--api-key", dtone.api_key, "--api-secret", dtone.api_secret, "--currency", "USD",
    )  # fmt: skip
    cli(
        "create_provider", "--name", "ding-1", "--kind", "ding", "--base-url", ding.url,
        "--api-key", ding.api_key, "--currency", "USD",
    )  # fmt: skip
    lines = {
        name: cli("sync_provider_catalog", "--provider", name, "--country", "MX")
        for name in ("dtone-1", "ding-1")
    }
    routing_forget()
    yield {"telcel": telcel, "att": att, "lines": lines}
    routing_forget()


def telcel_100(routed):
    return Route.objects.get(
        provider__name="dtone-1", product__operator=routed["telcel"], product__local_amount=100
    ).product


def place(product, number=NUMBER):
    user = UserFactory()
    wallet_topup_manual(account=user.account, amount=Decimal("100.00"))
    with transaction.atomic():
        order = order_place_with_wallet(
            account=user.account,
            wallet=wallet_get_or_create(account=user.account),
            livemode=True,
            channel="wallet",
            currency="EUR",
            user=user,
            lines=[LineRequest(product=product, recipient_number=number, quantity=1)],
        )
    return order.recharges.get()


def calls(recharge):
    return list(
        RechargeAttempt.objects.filter(recharge=recharge)
        .order_by("id")
        .values_list("provider", "action", "outcome")
    )


def test_sync_maps_both_providers_to_one_product_per_amount_with_documented_costs(routed):
    assert routed["lines"]["dtone-1"].startswith("operators mapped 2, unmapped 0; routes created")
    assert routed["lines"]["ding-1"].startswith("operators mapped 2, unmapped 0; routes created")
    product = telcel_100(routed)
    routes = {r.provider.name: r for r in Route.objects.filter(product=product)}
    assert set(routes) == {"dtone-1", "ding-1"}  # one product, two routes
    assert (routes["dtone-1"].cost, routes["dtone-1"].cost_currency) == (Decimal("5.5000"), "USD")
    assert routes["dtone-1"].sku == "30002"
    assert routes["ding-1"].sku == "MX_TL_TopUp_100" and routes["ding-1"].send_value == Decimal(
        "6.00"
    )
    assert ProviderOperator.objects.filter(operator__isnull=True).count() == 0
    # A new product, priced over the cheapest cost until staff set a rule.
    assert product.local_currency == "MXN" and product.retail_currency == "EUR"


def test_the_cheapest_route_delivers_and_records_cost_and_margin(routed, dtone, ding):
    product = telcel_100(routed)
    recharge = place(product)
    assert processor.recharge_process(recharge_id=recharge.pk).status in {S.DELIVERED, S.DISPATCHED}
    recharge.refresh_from_db()
    assert recharge.provider == "dtone-1"  # 5.50 USD against Ding's 6.00 less commission
    assert dtone.calls[recharge.public_id] == 1 and ding.calls[recharge.public_id] == 0


def test_a_refused_connection_fails_over_and_the_first_never_sees_it(routed, dtone, ding):
    product = telcel_100(routed)
    dtone.outage(True)
    recharge = place(product)
    assert processor.recharge_process(recharge_id=recharge.pk).status == S.DELIVERED
    recharge.refresh_from_db()
    assert recharge.provider == "ding-1"
    assert calls(recharge) == [
        ("dtone-1", "send", "unreachable"),
        ("ding-1", "send", "delivered"),
    ]
    dtone.outage(False)
    assert dtone.calls[recharge.public_id] == 0 and ding.calls[recharge.public_id] == 1
    assert_ledger_balanced()


def test_a_documented_refusal_fails_over(routed, dtone, ding):
    product = telcel_100(routed)
    dtone.refuse(number=NUMBER)
    recharge = place(product)
    assert processor.recharge_process(recharge_id=recharge.pk).status == S.DELIVERED
    recharge.refresh_from_db()
    assert recharge.provider == "ding-1"
    assert [c[0::2] for c in calls(recharge)] == [("dtone-1", "refused"), ("ding-1", "delivered")]


@override_settings(PROVIDER_TIMEOUT_SECONDS=0.5)
def test_slow_but_delivered_is_settled_by_lookup_and_never_sent_elsewhere(routed, dtone, ding):
    product = telcel_100(routed)
    dtone.slow_next(1.5)  # answers after our timeout, having made the top-up
    recharge = place(product)
    processor.recharge_process(recharge_id=recharge.pk)
    recharge.refresh_from_db()
    assert recharge.provider == "dtone-1"
    assert ding.calls[recharge.public_id] == 0  # the other provider never saw the reference
    assert calls(recharge)[0] == ("dtone-1", "send", "unclear")


@override_settings(PROVIDER_TIMEOUT_SECONDS=0.5, PROVIDER_CIRCUIT_FAILURES=2)
def test_a_failed_lookup_says_nothing_and_the_recharge_stays_at_its_provider(routed, dtone, ding):
    """The top-up was made but its answer came too late, and the look-up after it failed
    (503): the provider may hold it, so the retry asks it again, even with its circuit open,
    and never sends it to the next route."""
    product = telcel_100(routed)
    dtone.slow_next(1.5)  # made at once, answered after our timeout
    dtone.fail_lookups(1)
    recharge = place(product)
    outcome = processor.recharge_process(recharge_id=recharge.pk)
    assert outcome.status == S.DISPATCHED and outcome.retry_in
    assert health.figures("dtone-1").state == "open"  # the timeout and the 503
    retry = processor.recharge_process(recharge_id=recharge.pk, attempt=outcome.attempt)
    assert retry.status == S.DELIVERED
    recharge.refresh_from_db()
    assert recharge.provider == "dtone-1"
    assert ding.calls[recharge.public_id] == 0 and dtone.calls[recharge.public_id] == 1
    assert calls(recharge) == [
        ("dtone-1", "send", "unclear"),
        ("dtone-1", "status", "unreachable"),
        ("dtone-1", "status", "delivered"),
    ]
    assert_ledger_balanced()


def test_refused_everywhere_fails_once_refunded_once(routed, dtone, ding):
    product = telcel_100(routed)
    dtone.refuse(number=NUMBER)
    ding.refuse_number(NUMBER.lstrip("+"))
    recharge = place(product)
    before = Wallet.objects.get(account_id=recharge.account_id, kind="live").balance
    assert processor.recharge_process(recharge_id=recharge.pk).status == S.FAILED
    recharge.refresh_from_db()
    assert recharge.refunded
    after = Wallet.objects.get(account_id=recharge.account_id, kind="live").balance
    assert after == before + recharge.amount
    assert_ledger_balanced()


def test_an_outage_opens_the_circuit_then_new_recharges_skip_it(routed, dtone, ding):
    product = telcel_100(routed)
    dtone.outage(True)
    with override_settings(PROVIDER_CIRCUIT_FAILURES=2):
        for _ in range(2):
            health.record("dtone-1", ok=False, seconds=0.01)
    assert health.figures("dtone-1").state == "open"
    recharge = place(product)
    processor.recharge_process(recharge_id=recharge.pk)
    assert calls(recharge) == [("ding-1", "send", "delivered")]  # dtone-1 not even tried
    dtone.outage(False)


def test_balance_is_read_at_sync_and_shown(routed):
    provider = Provider.objects.get(name="dtone-1")
    assert provider.balance == Decimal("10000.00") and provider.balance_currency == "USD"
