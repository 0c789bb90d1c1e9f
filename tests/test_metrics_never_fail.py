"""Metrics never fail a request or a task (docs/operations.md, "Several processes").

- At start, a missing PROMETHEUS_MULTIPROC_DIR is created, and one that cannot be written is
  refused with a message naming the setting: a real gunicorn serves orders either way.
- An error while counting (here the folder removed after the process started, before its
  first count) is logged once per instrument and swallowed: the order is placed, its recharge
  delivered by a real worker, and the ledger balances.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import subprocess
import sys
import urllib.error
import urllib.request
import uuid
from decimal import Decimal
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry, Counter, Histogram
from prometheus_client.parser import text_string_to_metric_families
from rest_framework.test import APIClient

from accounts.services import account_set_b2b
from orders.models import Order
from recharges.models import Recharge
from reseller.metrics import Instrument
from tests.factories import ProductFactory, UserFactory, make_key
from tests.helpers import assert_ledger_balanced, database_url, fund
from tests.servers import gunicorn_serving
from tests.waiting import wait_until
from tests.worker_support import reloadly_worker
from wallet.models import Wallet

ROOT = Path(__file__).resolve().parent.parent
RECIPIENT = "+525512345678"
COUNTING_FAILED = "metrics: counting"


def _b2b_order_through_http(port: int, plaintext: str, product) -> tuple[int, dict]:
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}/api/v1/api-access/b2b/recharges",
        data=json.dumps(
            {
                "items": [
                    {"productId": product.public_id, "recipientNumber": RECIPIENT, "quantity": 1}
                ],
                "baseCurrency": "EUR",
            }
        ).encode(),
        method="POST",
        headers={
            "x-api-key": plaintext,
            "Idempotency-Key": uuid.uuid4().hex,
            "Content-Type": "application/json",
        },
    )
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read() or b"{}")


def _without_root_overrides() -> list[str]:
    """The command prefix that makes a process started by root obey file modes as any user
    does (root bypasses them through two capabilities, dropped here); nothing otherwise."""
    if os.geteuid() != 0:
        return []
    if not shutil.which("setpriv"):
        pytest.skip("running as root without setpriv (util-linux): no folder is unwritable")
    return ["setpriv", "--bounding-set=-dac_override,-dac_read_search", "--"]


def _instruments_that_failed(log: str) -> list[str]:
    """The instrument named by each "counting … failed" line of a log, in order."""
    return [
        line.split(COUNTING_FAILED, 1)[1].split()[0]
        for line in log.splitlines()
        if COUNTING_FAILED in line
    ]


def _reseller(funds: str = "20.00"):
    user = UserFactory()
    account_set_b2b(account=user.account, is_b2b=True)
    fund(user, funds)
    _key, plaintext = make_key(user, mode="live", name="Metrics drill")
    return user, plaintext


def _balance(user) -> Decimal:
    return Wallet.objects.get(account=user.account, kind="live").balance


@pytest.mark.integration
@pytest.mark.django_db(transaction=True)
def test_gunicorn_started_with_the_metrics_folder_missing_creates_it_and_places_orders(tmp_path):
    folder = tmp_path / "metrics" / "web"  # neither it nor its parent exists
    user, plaintext = _reseller()
    product = ProductFactory(retail_price=Decimal("5.00"))

    server = gunicorn_serving(
        {"PROMETHEUS_MULTIPROC_DIR": str(folder), "LOG_LEVEL": "WARNING"}, tmp_path, "web"
    )
    try:
        port = next(server)
        status, body = _b2b_order_through_http(port, plaintext, product)
        assert status == 201, body
        # Counted into the folder the process made: GET /metrics adds up its files.
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=30) as scrape:
            exposition = scrape.read().decode()
    finally:
        server.close()
    log = (tmp_path / "web.log").read_text()
    assert f"PROMETHEUS_MULTIPROC_DIR={folder} did not exist: created it" in log
    assert list(folder.glob("counter_*.db")), log
    placed = {
        "route": "/api/v1/api-access/b2b/recharges",
        "method": "POST",
        "status": "201",
    }
    assert any(
        sample.name == "reseller_http_requests_total" and sample.labels == placed
        for family in text_string_to_metric_families(exposition)
        for sample in family.samples
    ), exposition
    assert COUNTING_FAILED not in log and "Traceback" not in log
    assert Order.objects.count() == 1
    assert _balance(user) == Decimal("15.00")
    assert_ledger_balanced()


@pytest.mark.integration
@pytest.mark.django_db(transaction=True)
def test_gunicorn_started_with_an_unwritable_metrics_folder_refuses_it_by_name_and_places_orders(
    tmp_path,
):
    folder = tmp_path / "metrics"
    folder.mkdir()
    folder.chmod(0o555)  # no one may create a file in it, root included (below)
    user, plaintext = _reseller()
    product = ProductFactory(retail_price=Decimal("5.00"))

    server = gunicorn_serving(
        {"PROMETHEUS_MULTIPROC_DIR": str(folder), "LOG_LEVEL": "WARNING"},
        tmp_path,
        "web",
        prefix=_without_root_overrides(),
    )
    try:
        port = next(server)
        statuses = [_b2b_order_through_http(port, plaintext, product) for _ in range(2)]
    finally:
        server.close()
    log = (tmp_path / "web.log").read_text()
    assert [status for status, _body in statuses] == [201, 201], statuses
    assert f"PROMETHEUS_MULTIPROC_DIR={folder} refused: Permission denied" in log, log
    assert "This process counts no metrics" in log
    assert COUNTING_FAILED not in log and "Traceback" not in log  # refused once, then quiet
    assert list(folder.iterdir()) == []
    assert Order.objects.count() == 2
    assert _balance(user) == Decimal("10.00")
    assert_ledger_balanced()


COUNT_ONE_RECHARGE = """
import django

django.setup()
from reseller.metrics import RECHARGES

RECHARGES.labels("delivered", "simulator").inc()
print("counted")
"""


def test_an_empty_metrics_folder_setting_is_refused_by_name_not_written_into_the_working_folder(
    tmp_path,
):
    """Set but empty, prometheus_client counts into files named relative to the working
    directory (wherever the process was started); the start check refuses it."""
    done = subprocess.run(
        [sys.executable, "-c", COUNT_ONE_RECHARGE],
        cwd=tmp_path,
        env={
            **os.environ,
            "PYTHONPATH": str(ROOT),
            "DJANGO_SETTINGS_MODULE": "reseller.settings.test",
            "PROMETHEUS_MULTIPROC_DIR": "",
            "LOG_FORMAT": "human",
        },
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0 and done.stdout.strip() == "counted", done.stderr[-3000:]
    assert "PROMETHEUS_MULTIPROC_DIR= refused: it is empty" in done.stderr, done.stderr[-3000:]
    assert list(tmp_path.iterdir()) == []


# The web's side of a counting error: the folder goes after the start check and before the
# process counts anything (a volume unmounted under it), then real requests go through the
# whole middleware stack of a process in multiprocess mode.
REQUESTS_AFTER_THE_FOLDER_WENT = """
import json, os, shutil, sys
import django

django.setup()
shutil.rmtree(os.environ["PROMETHEUS_MULTIPROC_DIR"])

from django.test import Client

plaintext, product = sys.argv[1], sys.argv[2]
statuses = []
for n in range(3):
    response = Client().post(
        "/api/v1/api-access/b2b/recharges",
        {"items": [{"productId": product, "recipientNumber": "+525512345678", "quantity": 1}],
         "baseCurrency": "EUR"},
        content_type="application/json",
        headers={"x-api-key": plaintext, "Idempotency-Key": f"gone-{n}"},
    )
    statuses.append(response.status_code)
print(json.dumps(statuses))
"""


@pytest.mark.integration
@pytest.mark.django_db(transaction=True)
def test_a_counting_error_in_a_request_is_logged_once_and_the_order_is_placed(tmp_path):
    folder = tmp_path / "metrics"
    folder.mkdir()
    user, plaintext = _reseller()
    product = ProductFactory(retail_price=Decimal("5.00"))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "CELERY_"))} | {
        "DJANGO_SETTINGS_MODULE": "reseller.settings.test",
        "DATABASE_URL": database_url(),
        "PROMETHEUS_MULTIPROC_DIR": str(folder),
        "LOG_FORMAT": "human",
    }
    done = subprocess.run(
        [sys.executable, "-c", REQUESTS_AFTER_THE_FOLDER_WENT, plaintext, product.public_id],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert json.loads(done.stdout.strip().splitlines()[-1]) == [201, 201, 201]
    names = _instruments_that_failed(done.stderr)
    # Once per instrument, not per request: three requests, each instrument's error once.
    assert len(names) == len(set(names)), done.stderr[-3000:]
    assert {"reseller_http_requests", "reseller_http_request_seconds"} <= set(names), names
    assert "No such file or directory" in done.stderr
    assert Order.objects.count() == 3
    assert _balance(user) == Decimal("5.00")
    assert_ledger_balanced()


@pytest.mark.integration
@pytest.mark.django_db(transaction=True)
def test_a_counting_error_in_a_task_is_logged_once_and_the_recharge_is_delivered(
    reloadly, queue, publishing, tmp_path
):
    """The worker's side: its folder goes after it started, before its first count; it
    delivers every recharge of the order, logging each instrument's error once."""
    (ROOT / "test-artifacts").mkdir(exist_ok=True)
    folder = tmp_path / "metrics"
    folder.mkdir()
    worker = reloadly_worker(
        reloadly,
        queue,
        pool="threads",
        concurrency=2,
        extra_env={"PROMETHEUS_MULTIPROC_DIR": str(folder), "LOG_FORMAT": "human"},
    )
    try:
        shutil.rmtree(folder)
        user, plaintext = _reseller()
        product = ProductFactory(retail_price=Decimal("5.00"))
        response = APIClient().post(
            "/api/v1/api-access/b2b/recharges",
            {
                "items": [
                    {"productId": product.public_id, "recipientNumber": RECIPIENT, "quantity": 2}
                ],
                "baseCurrency": "EUR",
            },
            format="json",
            headers={"x-api-key": plaintext, "Idempotency-Key": "worker-gone-1"},
        )
        assert response.status_code == 201, response.content
        wait_until(
            lambda: set(Recharge.objects.values_list("status", flat=True)) == {"delivered"},
            timeout=60,
            what="both recharges delivered",
            state=lambda: (
                list(Recharge.objects.values_list("status", flat=True)),
                worker.log_path.read_text()[-3000:],
            ),
        )
    finally:
        worker.stop()
    log = worker.log_path.read_text()
    names = _instruments_that_failed(log)
    assert len(names) == len(set(names)), log[-3000:]  # each instrument once, two recharges
    assert "reseller_recharges" in names, names
    assert _balance(user) == Decimal("10.00")
    assert_ledger_balanced()


def test_an_instrument_that_cannot_count_logs_once_and_raises_nothing(caplog):
    """Any error of a metric call (here: label values that do not match its labels) is
    swallowed; the first is logged with its traceback, the next ones are not."""
    counter = Instrument(
        Counter("drill_things", "Things.", ["kind", "where"], registry=CollectorRegistry())
    )
    with caplog.at_level(logging.ERROR, logger="reseller.metrics"):
        for _ in range(3):
            counter.labels("only-one-value").inc()
            counter.labels("a", "b", "c").inc()
    records = [r for r in caplog.records if r.getMessage().startswith(COUNTING_FAILED)]
    assert len(records) == 1
    assert "drill_things" in records[0].getMessage()
    assert records[0].exc_info is not None


def test_an_instrument_counts_normally_and_times_blocks():
    registry = CollectorRegistry()
    counter = Instrument(Counter("drill_calls", "Calls.", ["provider"], registry=registry))
    seconds = Instrument(
        Histogram("drill_call_seconds", "Call time.", ["provider"], registry=registry)
    )
    counter.labels("simulator").inc()
    counter.labels("simulator").inc(2)
    with seconds.labels("simulator").time():
        pass
    assert registry.get_sample_value("drill_calls_total", {"provider": "simulator"}) == 3
    assert registry.get_sample_value("drill_call_seconds_count", {"provider": "simulator"}) == 1


def test_an_instrument_without_labels_is_refused_where_it_is_defined():
    """Unlabelled, prometheus_client opens its multiprocess file when the metric is defined
    (at import, before the start check has made the folder)."""
    with pytest.raises(ValueError, match="needs labels"):
        Instrument(Counter("drill_plain", "Plain.", registry=CollectorRegistry()))
