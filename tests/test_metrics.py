"""GET /metrics (docs/contract.md §15, docs/operations.md): who may read it, what it shows, and
counters that add up over several processes (prometheus_client's multiprocess mode)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from decimal import Decimal
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import Client, override_settings
from prometheus_client.parser import text_string_to_metric_families

from tests.helpers import assert_problem, fund, place, process, settings_in_a_process
from wallet.models import Wallet

REPO = Path(__file__).resolve().parent.parent

REQUIRED = [
    "reseller_http_requests_total",
    "reseller_http_request_seconds",
    "reseller_recharges_total",
    "reseller_provider_call_seconds",
    "reseller_provider_in_flight",
    "reseller_provider_circuit_open",
    "reseller_dispatch_queue_depth",
    "reseller_dispatch_oldest_queued_seconds",
    "reseller_webhook_deliveries_pending",
    "reseller_email_outbox_pending",
    "reseller_ledger_check_ok",
]


def scrape(client: Client | None = None, **extra) -> dict[tuple[str, frozenset], float]:
    """Every sample of GET /metrics from loopback: {(name, labels): value}."""
    response = (client or Client()).get("/metrics", REMOTE_ADDR="127.0.0.1", **extra)
    assert response.status_code == 200, response.content
    assert response["Content-Type"].startswith("text/plain; version=0.0.4")
    samples = {}
    for family in text_string_to_metric_families(response.content.decode()):
        for sample in family.samples:
            samples[(sample.name, frozenset(sample.labels.items()))] = sample.value
    return samples


def value(samples, name: str, **labels) -> float:
    return samples.get((name, frozenset(labels.items())), 0.0)


# -- who may read it --------------------------------------------------------------------------


@pytest.mark.django_db
@override_settings(METRICS_TOKEN="", METRICS_ALLOWED_IPS=[])
def test_with_nothing_set_only_loopback_callers_are_answered():
    assert Client().get("/metrics", REMOTE_ADDR="127.0.0.1").status_code == 200
    assert Client().get("/metrics", REMOTE_ADDR="::1").status_code == 200
    assert_problem(Client().get("/metrics", REMOTE_ADDR="203.0.113.7"), 403, "ip_not_allowed")


@pytest.mark.django_db
@override_settings(METRICS_TOKEN="", METRICS_ALLOWED_IPS=[], TRUSTED_PROXIES=["127.0.0.1"])
def test_behind_a_trusted_proxy_the_clients_address_counts_not_the_proxys():
    response = Client().get("/metrics", REMOTE_ADDR="127.0.0.1", HTTP_X_FORWARDED_FOR="203.0.113.7")
    assert_problem(response, 403, "ip_not_allowed")


@pytest.mark.django_db
@override_settings(METRICS_TOKEN="s3cret-metrics-token", METRICS_ALLOWED_IPS=[])
def test_a_token_is_required_when_set():
    outside = {"REMOTE_ADDR": "198.51.100.20"}
    missing = Client().get("/metrics", **outside)
    assert_problem(missing, 401, "not_authenticated")
    assert missing["WWW-Authenticate"].startswith("Bearer")
    wrong = Client().get("/metrics", HTTP_AUTHORIZATION="Bearer nope", **outside)
    assert_problem(wrong, 401, "token_invalid")
    loopback_without = Client().get("/metrics", REMOTE_ADDR="127.0.0.1")
    assert_problem(loopback_without, 401, "not_authenticated")
    right = Client().get("/metrics", HTTP_AUTHORIZATION="Bearer s3cret-metrics-token", **outside)
    assert right.status_code == 200
    assert b"reseller_http_requests_total" in right.content


@pytest.mark.django_db
@override_settings(METRICS_TOKEN="", METRICS_ALLOWED_IPS=["10.0.0.0/8", "192.0.2.5"])
def test_allowed_addresses_are_answered_and_the_others_refused():
    assert Client().get("/metrics", REMOTE_ADDR="10.1.2.3").status_code == 200
    assert Client().get("/metrics", REMOTE_ADDR="192.0.2.5").status_code == 200
    assert_problem(Client().get("/metrics", REMOTE_ADDR="192.0.2.6"), 403, "ip_not_allowed")
    # The list replaces loopback: it is not allowed unless listed.
    assert_problem(Client().get("/metrics", REMOTE_ADDR="127.0.0.1"), 403, "ip_not_allowed")


@pytest.mark.django_db
@override_settings(METRICS_TOKEN="tok", METRICS_ALLOWED_IPS=["10.0.0.0/8"])
def test_with_both_the_address_and_the_token_are_needed():
    token = {"HTTP_AUTHORIZATION": "Bearer tok"}
    assert_problem(
        Client().get("/metrics", REMOTE_ADDR="192.0.2.6", **token), 403, "ip_not_allowed"
    )
    assert_problem(Client().get("/metrics", REMOTE_ADDR="10.0.0.1"), 401, "not_authenticated")
    assert Client().get("/metrics", REMOTE_ADDR="10.0.0.1", **token).status_code == 200


# -- what it shows ----------------------------------------------------------------------------


@pytest.mark.django_db
def test_the_exposition_parses_and_holds_every_metric_of_the_contract():
    Client().get("/healthz")  # at least one request counted
    response = Client().get("/metrics", REMOTE_ADDR="127.0.0.1")
    assert response.status_code == 200
    families = {f.name: f for f in text_string_to_metric_families(response.content.decode())}
    names = {sample.name for family in families.values() for sample in family.samples}
    for name in REQUIRED:
        assert name in names or name + "_bucket" in names, name
    assert families["reseller_http_request_seconds"].type == "histogram"
    assert families["reseller_provider_call_seconds"].type == "histogram"
    lanes = {s.labels["lane"] for s in families["reseller_dispatch_queue_depth"].samples}
    assert lanes == {"live", "test", "waitlist"}
    # The ledger has not been checked in this (fresh) cache: the scrape checked it.
    assert value(scrape(), "reseller_ledger_check_ok", check="ledger") == 1


@pytest.mark.django_db
def test_a_request_is_counted_by_its_route_pattern_not_its_path():
    before = scrape()
    response = Client().get("/api/v1/api-access/b2b/recharges/rch_doesnotexist1")
    assert response.status_code in (401, 403, 404)
    after = scrape()
    route = "/api/v1/api-access/b2b/recharges/<id:recharge_id>"
    labels = {"route": route, "method": "GET", "status": str(response.status_code)}
    assert value(after, "reseller_http_requests_total", **labels) == (
        value(before, "reseller_http_requests_total", **labels) + 1
    )
    assert not any("rch_doesnotexist1" in str(labels) for _name, labels in after)
    count = (
        "reseller_http_request_seconds_count",
        frozenset({"route": route, "method": "GET"}.items()),
    )
    assert after[count] >= 1


@pytest.mark.django_db
def test_a_delivered_recharge_is_counted_and_its_provider_call_timed(user, product):
    before = scrape()
    fund(user, "20.00")
    order = place(user, product)
    process(order)
    assert order.recharges.get().status == "delivered"
    after = scrape()
    provider = order.recharges.get().provider
    assert provider
    delivered = {"status": "delivered", "provider": provider}
    assert value(after, "reseller_recharges_total", **delivered) == (
        value(before, "reseller_recharges_total", **delivered) + 1
    )
    calls = {"provider": provider}
    assert value(after, "reseller_provider_call_seconds_count", **calls) >= (
        value(before, "reseller_provider_call_seconds_count", **calls) + 1
    )
    assert value(after, "reseller_provider_in_flight", provider=provider) == 0
    assert value(after, "reseller_provider_circuit_open", provider=provider) == 0


@pytest.mark.django_db
def test_queued_recharges_show_in_the_queue_depth_and_its_oldest_age(user, product):
    fund(user, "20.00")
    place(user, product, quantity=2)  # in-process tasks are not run by `place`
    samples = scrape()
    assert value(samples, "reseller_dispatch_queue_depth", lane="live") == 2
    assert value(samples, "reseller_dispatch_oldest_queued_seconds") >= 0


@pytest.mark.django_db
def test_the_ledger_check_result_is_the_last_checks(user):
    fund(user, "10.00")
    call_command("check_ledger")
    assert value(scrape(), "reseller_ledger_check_ok", check="ledger") == 1
    assert value(scrape(), "reseller_ledger_check_ok") == 1  # the contract's bare series
    Wallet.objects.filter(account=user.account).update(balance=Decimal("999.00"))
    with pytest.raises(CommandError):
        call_command("check_ledger")
    assert value(scrape(), "reseller_ledger_check_ok", check="ledger") == 0
    assert value(scrape(), "reseller_ledger_check_ok", check="books") == 1
    assert value(scrape(), "reseller_ledger_check_ok") == 0  # either check wrong: 0
    text = Client().get("/metrics", REMOTE_ADDR="127.0.0.1").content.decode()
    assert "\nreseller_ledger_check_ok 0.0\n" in text
    Wallet.objects.filter(account=user.account).update(balance=Decimal("10.00"))
    call_command("check_ledger")
    assert value(scrape(), "reseller_ledger_check_ok", check="ledger") == 1
    assert value(scrape(), "reseller_ledger_check_ok") == 1


# -- several processes ------------------------------------------------------------------------

COUNT_IN_A_PROCESS = """
import sys
from reseller.metrics import RECHARGES
RECHARGES.labels("delivered", "multiproc-test").inc(int(sys.argv[1]))
"""


@pytest.mark.django_db
def test_counters_of_separate_processes_add_up(tmp_path, monkeypatch):
    directory = tmp_path / "prometheus"
    directory.mkdir()
    env = {**os.environ, "PROMETHEUS_MULTIPROC_DIR": str(directory)}
    for count in (3, 4):
        subprocess.run(
            [sys.executable, "-c", COUNT_IN_A_PROCESS, str(count)],
            cwd=REPO,
            env=env,
            check=True,
            timeout=60,
        )
    assert len(list(directory.glob("*.db"))) >= 2  # one file per process
    monkeypatch.setenv("PROMETHEUS_MULTIPROC_DIR", str(directory))
    samples = scrape()
    labels = {"status": "delivered", "provider": "multiproc-test"}
    assert value(samples, "reseller_recharges_total", **labels) == 7
    # The gauges read at scrape time are there in this mode too.
    assert ("reseller_dispatch_oldest_queued_seconds", frozenset()) in samples


def test_metrics_enabled_false_drops_the_middleware_from_a_process_started_with_it():
    """The switch is read at start (the bench's "metrics off" server): no counting middleware."""
    off = settings_in_a_process({"METRICS_ENABLED": "false"}, "METRICS_ENABLED", "MIDDLEWARE")
    on = settings_in_a_process({"METRICS_ENABLED": "true"}, "METRICS_ENABLED", "MIDDLEWARE")
    assert off["METRICS_ENABLED"] is False
    assert "reseller.metrics.MetricsMiddleware" not in off["MIDDLEWARE"]
    assert on["MIDDLEWARE"][0] == "reseller.metrics.MetricsMiddleware"


@pytest.mark.django_db
@override_settings(METRICS_ENABLED=False, METRICS_TOKEN="", METRICS_ALLOWED_IPS=[])
def test_with_metrics_off_the_endpoint_is_not_there():
    assert_problem(Client().get("/metrics", REMOTE_ADDR="127.0.0.1"), 404, "not_found")


# -- the documents that use them --------------------------------------------------------------


@pytest.mark.django_db
def test_every_metric_we_serve_is_documented_and_the_dashboard_uses_only_those():
    response = Client().get("/metrics", REMOTE_ADDR="127.0.0.1")
    families = {
        f.name: f.type
        for f in text_string_to_metric_families(response.content.decode())
        if f.name.startswith("reseller_")
    }
    served = set()
    for name, kind in families.items():
        served |= {name + "_total"} if kind == "counter" else {name}
        if kind == "histogram":
            served |= {name + "_bucket", name + "_count", name + "_sum"}
    operations = (REPO / "docs" / "operations.md").read_text()
    for name, kind in families.items():
        assert f"`{name + '_total' if kind == 'counter' else name}`" in operations, name
    dashboard = (REPO / "deploy" / "grafana" / "reseller.json").read_text()
    used = set(re.findall(r"reseller_[a-z_]+", dashboard)) - {"reseller_"}
    with_a_redis_broker = {"reseller_celery_queue_length"}  # the tests have none
    assert all(f"`{name}`" in operations for name in with_a_redis_broker)
    assert used and used <= served | with_a_redis_broker, used - served
    json.loads(dashboard)
