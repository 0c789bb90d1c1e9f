"""Providers as rows, routes, the cheapest healthy route, failover and the circuit breaker
(docs/contract.md §14, docs/providers.md), with the built-in simulator as the provider kind:
its numbers choose its answers (…9990 refused, …9992 timeout then delivered)."""

from decimal import Decimal
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.test import override_settings

from recharges import processor
from recharges.models import Recharge, RechargeAttempt
from tests.factories import ProductFactory
from tests.helpers import assert_ledger_balanced, assert_problem, bearer, funded_order
from tests.provider_support import two_simulators
from upstreams import health
from upstreams.models import Provider, ProviderOperator, Route
from upstreams.routing import route_choose
from upstreams.services import catalog_sync
from wallet.models import Wallet

pytestmark = pytest.mark.django_db
S = Recharge.Status


def cli(*args) -> str:
    out = StringIO()
    call_command(*args, stdout=out)
    return out.getvalue().strip()


def place(product, number="+525512345678", quantity=1, funds="100.00"):
    order = funded_order(product, number=number, quantity=quantity, funds=funds)
    return list(order.recharges.order_by("id"))


def balance(recharge) -> Decimal:
    return Wallet.objects.get(account_id=recharge.account_id, kind="live").balance


# -- rows and the CLI ----------------------------------------------------------------------


def test_create_provider_prints_only_the_name_and_keeps_secrets_unshown():
    out = cli(
        "create_provider",
        "--name",
        "dt-main",
        "--kind",
        "dtone",
        "--api-key",
        "key-1",
        "--api-secret",
        "very-secret",
        "--base-url",
        "https://dvs-api.dtone.com",
    )
    assert out == "dt-main"
    provider = Provider.objects.get(name="dt-main")
    assert (provider.kind, provider.api_secret, provider.enabled) == ("dtone", "very-secret", True)


def test_create_provider_refuses_missing_credentials_and_duplicates():
    with pytest.raises(CommandError, match="--client-id"):
        cli("create_provider", "--name", "rl", "--kind", "reloadly")
    cli("create_provider", "--name", "sim", "--kind", "simulator")
    with pytest.raises(CommandError, match="exists already"):
        cli("create_provider", "--name", "sim", "--kind", "simulator")
    assert Provider.objects.count() == 1


def test_set_provider_disables_and_reorders():
    cli("create_provider", "--name", "sim", "--kind", "simulator")
    assert cli("set_provider", "--name", "sim", "--enabled", "false", "--priority", "7") == (
        "sim disabled priority 7"
    )
    provider = Provider.objects.get(name="sim")
    assert (provider.enabled, provider.priority) == (False, 7)
    with pytest.raises(CommandError):
        cli("set_provider", "--name", "nobody", "--enabled", "true")


def test_sync_maps_by_name_makes_one_route_per_product_and_removes_what_is_gone():
    products = [ProductFactory(retail_price=Decimal("5.00")) for _ in range(3)]
    cli("create_provider", "--name", "sim", "--kind", "simulator")
    line = cli("sync_provider_catalog", "--provider", "sim")
    assert line.startswith("operators mapped 3, unmapped 0; routes created 3, updated 0, removed 0")
    route = Route.objects.get(product=products[0])
    assert (route.cost, route.cost_currency) == (Decimal("4.6000"), "EUR")  # 92% of 5.00
    assert ProviderOperator.objects.filter(mapped_by="name").count() == 3
    assert cli("sync_provider_catalog", "--provider", "sim").startswith(
        "operators mapped 3, unmapped 0; routes created 0, updated 0, removed 0"
    )
    products[2].active = False
    products[2].save()  # the simulator no longer sells it
    assert cli("sync_provider_catalog", "--provider", "sim").endswith("removed 1")
    assert not Route.objects.get(product=products[2]).active


def test_a_product_sold_by_two_providers_is_one_product_with_two_routes():
    product = ProductFactory(retail_price=Decimal("5.00"))
    routes = two_simulators(product)
    assert sorted(r.provider.name for r in routes) == ["sim-a", "sim-b"]


# -- routing ----------------------------------------------------------------------------------


def test_the_cheapest_route_wins_whatever_the_priority():
    product = ProductFactory(retail_price=Decimal("5.00"))
    two_simulators(product, cost_a="95", cost_b="90", priority_a=1, priority_b=2)
    assert route_choose(product=product).provider.name == "sim-b"
    (recharge,) = place(product)
    assert processor.recharge_process(recharge_id=recharge.pk).status == S.DELIVERED
    recharge.refresh_from_db()
    assert (recharge.provider, recharge.route.provider.name) == ("sim-b", "sim-b")
    assert (recharge.cost, recharge.cost_currency) == (Decimal("4.5000"), "EUR")
    assert (recharge.margin, recharge.margin_currency) == (Decimal("0.50"), "EUR")


def test_equal_costs_go_by_priority_and_a_disabled_provider_is_skipped():
    product = ProductFactory(retail_price=Decimal("5.00"))
    two_simulators(product, priority_a=5, priority_b=1)
    assert route_choose(product=product).provider.name == "sim-b"
    cli("set_provider", "--name", "sim-b", "--enabled", "false")
    assert route_choose(product=product).provider.name == "sim-a"


def test_a_provider_without_the_balance_for_it_is_skipped():
    product = ProductFactory(retail_price=Decimal("5.00"))
    two_simulators(product, cost_a="95", cost_b="90")
    Provider.objects.filter(name="sim-b").update(balance=Decimal("1.00"), balance_currency="EUR")
    assert route_choose(product=product).provider.name == "sim-a"


def test_without_provider_rows_airtime_provider_is_a_target_like_any_other():
    """No provider row: the recharge goes to AIRTIME_PROVIDER by the same path, its call
    recorded, and the simulator costs AIRTIME_SIMULATOR_COST_PERCENT (92) of the price."""
    product = ProductFactory(retail_price=Decimal("5.00"))
    (recharge,) = place(product)
    assert processor.recharge_process(recharge_id=recharge.pk).status == S.DELIVERED
    recharge.refresh_from_db()
    assert (recharge.provider, recharge.route) == ("simulator", None)
    assert (recharge.cost, recharge.cost_currency) == (Decimal("4.6000"), "EUR")
    assert (recharge.margin, recharge.margin_currency) == (Decimal("0.40"), "EUR")
    attempt = RechargeAttempt.objects.get(recharge=recharge)
    assert (attempt.provider, attempt.action, attempt.outcome) == ("simulator", "send", "delivered")
    assert health.figures("simulator").calls == 1


@override_settings(AIRTIME_SIMULATOR_COST_PERCENT=80)
def test_the_simulator_without_rows_costs_its_setting_in_the_books():
    product = ProductFactory(retail_price=Decimal("5.00"))
    (recharge,) = place(product)
    processor.recharge_process(recharge_id=recharge.pk)
    recharge.refresh_from_db()
    assert (recharge.cost, recharge.margin) == (Decimal("4.0000"), Decimal("1.00"))
    assert cli("check_books") == "books ok"  # the sale and its cost are booked


# -- failover ---------------------------------------------------------------------------------


def test_a_documented_refusal_everywhere_fails_once_and_refunds_once():
    product = ProductFactory(retail_price=Decimal("5.00"))
    two_simulators(product)
    (recharge,) = place(product, number="+525512349990")  # every simulator refuses it
    before = balance(recharge)
    assert processor.recharge_process(recharge_id=recharge.pk).status == S.FAILED
    recharge.refresh_from_db()
    assert recharge.refunded and recharge.failure_code == "invalid_recipient"
    assert balance(recharge) == before + recharge.amount
    calls = list(
        RechargeAttempt.objects.filter(recharge=recharge).values_list("provider", "outcome")
    )
    assert calls == [("sim-a", "refused"), ("sim-b", "refused")]
    assert_ledger_balanced()


def test_an_open_circuit_sends_new_recharges_to_the_next_route_and_half_open_probes_once():
    product = ProductFactory(retail_price=Decimal("5.00"))
    two_simulators(product, cost_a="90", cost_b="95")
    with override_settings(PROVIDER_CIRCUIT_FAILURES=3):
        for _ in range(3):
            health.record("sim-a", ok=False, seconds=0.1)
    assert health.figures("sim-a").state == "open"
    (recharge,) = place(product)
    processor.recharge_process(recharge_id=recharge.pk)
    recharge.refresh_from_db()
    assert recharge.provider == "sim-b"
    # The cool-down over: half-open lets exactly one probe through, which closes it.
    health.cache.delete(health._key("sim-a", "open"))
    assert health.figures("sim-a").state == "degraded"
    assert health.allow("sim-a") and not health.allow("sim-a")
    health.record("sim-a", ok=True, seconds=0.05)
    assert health.figures("sim-a").state == "healthy" and health.allow("sim-a")


def test_a_timeout_is_settled_at_the_same_provider_and_never_sent_elsewhere():
    product = ProductFactory(retail_price=Decimal("5.00"))
    two_simulators(product, cost_a="90", cost_b="95")
    (recharge,) = place(product, number="+525512349992")  # timeout, but the top-up was made
    assert processor.recharge_process(recharge_id=recharge.pk).status == S.DELIVERED
    calls = list(
        RechargeAttempt.objects.filter(recharge=recharge).values_list(
            "provider", "action", "outcome"
        )
    )
    assert calls == [("sim-a", "send", "unclear"), ("sim-a", "status", "delivered")]
    assert_ledger_balanced()


def test_a_lost_top_up_is_retried_at_the_same_provider_only():
    product = ProductFactory(retail_price=Decimal("5.00"))
    two_simulators(product, cost_a="90", cost_b="95")
    (recharge,) = place(product, number="+525512349993")  # timeout, nothing made
    outcome = processor.recharge_process(recharge_id=recharge.pk)
    assert outcome.status == S.DISPATCHED and outcome.retry_in
    retry = processor.recharge_process(recharge_id=recharge.pk, attempt=outcome.attempt)
    assert retry.status == S.DISPATCHED
    providers = set(
        RechargeAttempt.objects.filter(recharge=recharge).values_list("provider", flat=True)
    )
    assert providers == {"sim-a"}


def test_admin_providers_lists_state_and_figures_never_secrets(api, staff):
    product = ProductFactory(retail_price=Decimal("5.00"))
    two_simulators(product)
    (recharge,) = place(product)
    processor.recharge_process(recharge_id=recharge.pk)
    api.credentials(**bearer(staff))
    body = api.get("/api/v1/admin/providers").json()
    assert (body["count"], body["page"], body["next"]) == (2, 1, None)  # a list: §1's envelope
    by_name = {p["name"]: p for p in body["results"]}
    assert set(by_name) == {"sim-a", "sim-b"}
    first = by_name["sim-a"]
    assert set(first) == {
        "name", "kind", "enabled", "priority", "state", "balance", "currency",
        "successRate", "latencyP50Ms", "latencyP95Ms", "inFlight",
    }  # fmt: skip
    assert (first["state"], first["successRate"], first["inFlight"]) == ("healthy", 1.0, 0)
    listed = api.get("/api/v1/admin/recharges").json()
    row = listed["results"][0]
    assert row["provider"] == "sim-a" and row["cost"] == "4.60" and row["margin"] == "0.40"
    assert row["providerReference"].startswith("sim_")


def test_admin_providers_is_staff_only(user_api):
    assert user_api.get("/api/v1/admin/providers").status_code == 403


def test_admin_providers_pages_like_every_list(api, staff):
    product = ProductFactory(retail_price=Decimal("5.00"))
    two_simulators(product)
    api.credentials(**bearer(staff))
    first = api.get("/api/v1/admin/providers?limit=1").json()
    assert first["count"] == 2 and len(first["results"]) == 1 and first["next"]
    second = api.get("/api/v1/admin/providers?limit=1&page=2").json()
    assert [p["name"] for p in first["results"] + second["results"]] == ["sim-a", "sim-b"]
    assert_problem(api.get("/api/v1/admin/providers?limit=101"), 400, "validation_error")


# -- the back office ----------------------------------------------------------------------


@pytest.fixture
def admin_client(staff):
    from django.test import Client

    from tests.helpers import second_factor_login

    client = Client()
    second_factor_login(client, staff)
    return client


def test_staff_add_a_provider_in_the_back_office_and_its_secret_is_never_shown(admin_client):
    page = admin_client.get("/admin/upstreams/provider/add/")
    assert page.status_code == 200
    response = admin_client.post(
        "/admin/upstreams/provider/add/",
        {
            "name": "ding-main",
            "kind": "ding",
            "base_url": "https://api.dingconnect.com",
            "api_key": "ding-secret-key-123",
            "priority": "10",
            "max_in_flight": "20",
            "enabled": "on",
            "currency": "USD",
        },
    )
    assert response.status_code == 302, response.content.decode()[:2000]
    provider = Provider.objects.get(name="ding-main")
    assert provider.api_key == "ding-secret-key-123"
    change = admin_client.get(f"/admin/upstreams/provider/{provider.pk}/change/")
    assert change.status_code == 200
    assert b"ding-secret-key-123" not in change.content
    assert b"set: api key" in change.content
    listing = admin_client.get("/admin/upstreams/provider/")
    assert listing.status_code == 200 and b"ding-main" in listing.content
    assert b"ding-secret-key-123" not in listing.content


def test_the_back_office_refuses_a_provider_without_its_credentials(admin_client):
    response = admin_client.post(
        "/admin/upstreams/provider/add/",
        {"name": "dt", "kind": "dtone", "priority": "1", "max_in_flight": "5", "enabled": "on"},
    )
    assert response.status_code == 200 and b"Required for this kind" in response.content
    assert not Provider.objects.exists()


def test_staff_map_an_unmapped_operator_and_its_routes_come(
    admin_client, django_capture_on_commit_callbacks
):
    product = ProductFactory(retail_price=Decimal("5.00"))
    cli("create_provider", "--name", "sim", "--kind", "simulator")
    catalog_sync(provider=Provider.objects.get(name="sim"))
    upstream = ProviderOperator.objects.get(provider__name="sim")
    # As if the provider spelt it so that no catalog operator answers to it:
    ProviderOperator.objects.filter(pk=upstream.pk).update(operator=None, mapped_by="")
    Route.objects.all().delete()
    listing = admin_client.get("/admin/upstreams/provideroperator/?mapped=no")
    assert listing.status_code == 200 and upstream.name.encode() in listing.content
    with django_capture_on_commit_callbacks(execute=True):
        response = admin_client.post(
            f"/admin/upstreams/provideroperator/{upstream.pk}/change/",
            {"operator": product.operator.pk},
        )
    assert response.status_code == 302
    upstream.refresh_from_db()
    assert (upstream.operator, upstream.mapped_by) == (product.operator, "staff")
    assert Route.objects.filter(product=product, provider__name="sim", active=True).exists()


def test_a_recharge_dispatched_before_any_provider_row_is_settled_where_it_went():
    """Sent to AIRTIME_PROVIDER while no provider row existed, its worker died; providers
    are added meanwhile. The take-over asks AIRTIME_PROVIDER, never a new route."""
    from datetime import timedelta

    from django.utils import timezone

    from upstreams.adapters.simulator import SimulatorProvider

    product = ProductFactory(retail_price=Decimal("5.00"))
    (recharge,) = place(product)
    Recharge.objects.filter(pk=recharge.pk).update(status=S.DISPATCHED, attempts=1)
    recharge.refresh_from_db()
    SimulatorProvider().send(processor.topup_request(recharge))  # it reached the provider
    two_simulators(product)
    processor.recharge_process(
        recharge_id=recharge.pk, quiet_since=timezone.now() + timedelta(seconds=1)
    )
    recharge.refresh_from_db()
    assert recharge.status == S.DELIVERED
    assert (recharge.provider, recharge.route) == ("simulator", None)
    calls = RechargeAttempt.objects.filter(recharge=recharge).values_list("provider", "action")
    assert list(calls) == [("simulator", "status")]  # found there: never sent again
