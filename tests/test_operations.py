"""Operating the service (docs/operations.md): database connections of a threaded worker,
PgBouncer in transaction mode, JSON logs carrying the request id into Celery tasks."""

import json
import logging
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
from decimal import Decimal
from pathlib import Path

import pytest
import yaml
from celery import shared_task
from django.core.exceptions import ImproperlyConfigured
from django.db import connection

from accounts.services import account_set_b2b
from reseller.celery import _request_id_publish
from reseller.dbconfig import THREADS_WITHOUT_POOL, database_for_worker, is_threaded, pool_size_for
from reseller.logs import JsonFormatter, RequestIdLogFilter, current_request_id, request_id_bound
from reseller.tasks import enqueue
from tests.factories import ProductFactory, UserFactory, make_key
from tests.fakes.receiver import Receiver
from tests.helpers import assert_ledger_balanced, client_for, fund, place, process
from tests.servers import free_port
from tests.waiting import wait_until
from webhooks.delivery import endpoint_drain
from webhooks.services import endpoint_create

ROOT = Path(__file__).resolve().parent.parent
PG = {"ENGINE": "django.db.backends.postgresql", "NAME": "x", "OPTIONS": {}}


def run(code: str, env: dict, *args: str) -> subprocess.CompletedProcess:
    clean = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("DATABASE_", "DJANGO_", "CELERY_", "LOG_", "OTEL_"))
    }
    return subprocess.run(
        [sys.executable, *(args or ("-c", code))],
        cwd=ROOT,
        env={**clean, "DJANGO_SETTINGS_MODULE": "reseller.settings.test", **env},
        capture_output=True,
        text=True,
        timeout=120,
    )


SHOW = "import django; django.setup(); from django.conf import settings as s; "


# -- the pool of a threaded worker ----------------------------------------------------------


@pytest.mark.parametrize(("threads", "size"), [(21, 10), (100, 10), (200, 20), (1000, 100)])
def test_a_threaded_worker_without_a_pool_size_gets_one_from_its_concurrency(threads, size):
    database = {**PG, "OPTIONS": {}, "CONN_MAX_AGE": 60, "CONN_HEALTH_CHECKS": True}
    got = database_for_worker(database, threads=threads, pool_size=None, timeout=7.0)
    assert got == size == pool_size_for(threads)
    assert database["OPTIONS"]["pool"] == {"min_size": 2, "max_size": size, "timeout": 7.0}
    assert database["CONN_MAX_AGE"] == 0  # the pool and persistent connections exclude each other


def test_few_threads_an_explicit_pool_or_sqlite_are_left_as_they_are():
    few = {**PG, "OPTIONS": {}}
    assert database_for_worker(few, threads=THREADS_WITHOUT_POOL, pool_size=None, timeout=1) is None
    assert "pool" not in few["OPTIONS"]
    explicit = {**PG, "OPTIONS": {"pool": {"max_size": 4}}}
    assert database_for_worker(explicit, threads=200, pool_size=4, timeout=1) is None
    assert explicit["OPTIONS"]["pool"] == {"max_size": 4}
    sqlite = {"ENGINE": "django.db.backends.sqlite3", "OPTIONS": {}}
    assert database_for_worker(sqlite, threads=200, pool_size=None, timeout=1) is None


def test_many_threads_with_the_pool_turned_off_are_refused_naming_the_setting():
    with pytest.raises(ImproperlyConfigured, match="DATABASE_POOL_SIZE") as refused:
        database_for_worker({**PG, "OPTIONS": {}}, threads=100, pool_size=0, timeout=1)
    assert "100 PostgreSQL connections" in str(refused.value)


def test_celerys_thread_pools_are_told_from_its_process_pools():
    from celery.concurrency.prefork import TaskPool as Prefork
    from celery.concurrency.thread import TaskPool as Threads

    assert is_threaded("threads") and is_threaded(Threads) and is_threaded("gevent")
    assert not is_threaded("prefork") and not is_threaded(Prefork) and not is_threaded("solo")


def test_unset_pool_size_is_none_and_zero_is_kept_apart():
    unset = run(
        SHOW + "print(s.DATABASE_POOL_SIZE, 'pool' in s.DATABASES['default']['OPTIONS'])", {}
    )
    assert unset.returncode == 0, unset.stderr
    assert unset.stdout.split() == ["None", "False"]
    zero = run(SHOW + "print(s.DATABASE_POOL_SIZE)", {"DATABASE_POOL_SIZE": "0"})
    assert zero.stdout.split() == ["0"], zero.stderr


def test_a_real_worker_of_many_threads_with_the_pool_off_refuses_to_start():
    """The worker process itself, as `celery worker` starts it: it exits before connecting,
    and says which setting to change."""
    env = {
        "DATABASE_URL": "postgres://postgres@127.0.0.1:5432/postgres",
        "DATABASE_POOL_SIZE": "0",
        "CELERY_BROKER_URL": "redis://127.0.0.1:1/0",  # never reached
    }
    args = ("-m", "celery", "-A", "reseller", "worker", "--pool=threads", "--concurrency=100")
    result = run("", env, *args, "--without-gossip", "--without-mingle", "--without-heartbeat")
    assert result.returncode != 0
    assert "DATABASE_POOL_SIZE" in result.stderr, result.stderr[-2000:]
    assert "100 threads" in result.stderr
    assert "ready." not in result.stdout + result.stderr


# -- PgBouncer --------------------------------------------------------------------------------


def test_behind_pgbouncer_no_server_side_cursors_and_no_prepared_statements():
    code = SHOW + (
        "d = s.DATABASES['default']; print(json.dumps([d.get('DISABLE_SERVER_SIDE_CURSORS'),"
        " d['OPTIONS'].get('server_side_binding'), d['OPTIONS'].get('prepare_threshold'),"
        " d['CONN_MAX_AGE']]))"
    )
    code = "import json; " + code
    behind = run(code, {"DATABASE_PGBOUNCER": "true"})
    assert behind.returncode == 0, behind.stderr
    assert json.loads(behind.stdout) == [True, None, None, 60]
    direct = run(code, {})
    assert json.loads(direct.stdout) == [None, True, 1, 60], direct.stderr
    # PgBouncer 1.21+ with max_prepared_statements keeps them: said on purpose, allowed.
    prepared = run(code, {"DATABASE_PGBOUNCER": "true", "DATABASE_PREPARED_STATEMENTS": "true"})
    assert json.loads(prepared.stdout) == [True, True, 1, 60], prepared.stderr
    pooled = run(code, {"DATABASE_PGBOUNCER": "true", "DATABASE_POOL_SIZE": "10"})
    assert json.loads(pooled.stdout) == [True, None, None, 0], pooled.stderr


SESSION_LOCK = re.compile(r"pg_(try_)?advisory_lock(_shared)?\b")


def test_the_code_takes_no_session_level_advisory_lock():
    """Transaction pooling lends a server connection for one transaction: a session-level
    advisory lock would stay with that connection after commit, held for the next client. The
    app's locks (card limits, idempotency keys) are pg_advisory_xact_lock (reseller/db.py)."""
    packages = [
        folder
        for folder in ROOT.iterdir()
        if (folder / "__init__.py").exists() and folder.name not in {"tests", "bench"}
    ]
    assert len(packages) > 10
    found = [
        str(path.relative_to(ROOT))
        for folder in packages
        for path in folder.rglob("*.py")
        if SESSION_LOCK.search(path.read_text(encoding="utf-8"))
    ]
    assert found == []
    assert "pg_advisory_xact_lock" in (ROOT / "reseller" / "db.py").read_text()


def test_compose_runs_the_apps_straight_to_postgresql_and_keeps_pgbouncer_for_many_hosts():
    """Measured on one 2-core host (docs/performance.md, "database path"): PgBouncer made B2B
    and the routed processor no faster than the apps straight to PostgreSQL, so straight is
    compose's default, one process fewer. PgBouncer in transaction mode stays as the profile
    "pgbouncer", which DATABASE_URL and DATABASE_PGBOUNCER from the environment switch the
    apps to."""
    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    services = compose["services"]
    for name in ("web", "worker", "webhooks", "beat"):
        env = services[name]["environment"]
        assert env["DATABASE_URL"].startswith("${DATABASE_URL:-"), name
        assert "@postgres:5432/" in env["DATABASE_URL"], name
        assert env["DATABASE_PGBOUNCER"] == "${DATABASE_PGBOUNCER:-false}", name
        assert "pgbouncer" not in services[name].get("depends_on", {}), name
    assert "@postgres:5432/" in services["migrate"]["environment"]["DATABASE_URL"]
    bouncer = services["pgbouncer"]
    assert bouncer["profiles"] == ["pgbouncer"]
    assert bouncer["environment"]["POOL_MODE"] == "transaction"


def pgbouncer_binary() -> str | None:
    return shutil.which("pgbouncer") or (
        "/usr/sbin/pgbouncer" if Path("/usr/sbin/pgbouncer").exists() else None
    )


@pytest.fixture
def pgbouncer():
    """A real PgBouncer in transaction mode on a free port, in front of the test database's
    server, with two server connections per database (so clients really share them)."""
    binary = pgbouncer_binary()
    if binary is None:
        pytest.skip("pgbouncer is not installed (apt-get install pgbouncer)")
    params = connection.get_connection_params()
    port = free_port()
    folder = Path(tempfile.mkdtemp(prefix="reseller-pgbouncer-"))
    folder.chmod(0o755)
    (folder / "users.txt").write_text(f'"{params["user"]}" ""\n')
    (folder / "pgbouncer.ini").write_text(
        "[databases]\n"
        f"* = host={params.get('host') or '127.0.0.1'} port={params.get('port') or 5432}\n"
        "[pgbouncer]\n"
        f"listen_addr = 127.0.0.1\nlisten_port = {port}\n"
        f"unix_socket_dir =\nauth_type = trust\nauth_file = {folder / 'users.txt'}\n"
        "pool_mode = transaction\ndefault_pool_size = 2\nmax_client_conn = 200\n"
        "ignore_startup_parameters = extra_float_digits,options\n"
    )
    for name in ("users.txt", "pgbouncer.ini"):
        (folder / name).chmod(0o644)
    command = [binary, str(folder / "pgbouncer.ini")]
    if os.geteuid() == 0:  # PgBouncer refuses to run as root
        command[1:1] = ["-u", "postgres"]
    log = (folder / "pgbouncer.log").open("w")
    proc = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)

    def listening() -> bool:
        assert proc.poll() is None, (folder / "pgbouncer.log").read_text()
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
        except OSError:
            return False
        return True

    wait_until(listening, timeout=15, what="PgBouncer to listen")
    try:
        yield port
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=15)
        log.close()
        shutil.rmtree(folder, ignore_errors=True)


THROUGH_PGBOUNCER = """
import django, threading, time
django.setup()
from decimal import Decimal
from django.db import connection, transaction
from checkout.limits import Purchase, purchase_lock
from orders.models import Order
from recharges.models import Recharge
from tests.factories import ProductFactory, UserFactory
from tests.helpers import assert_ledger_balanced, fund, place, process

assert connection.settings_dict["DISABLE_SERVER_SIDE_CURSORS"] is True
user = UserFactory()
fund(user, "20")
order = place(user, ProductFactory(retail_price=Decimal("5.00")), quantity=2)
process(order)
assert set(Recharge.objects.filter(order=order).values_list("status", flat=True)) == {"delivered"}
# QuerySet.iterator() outside a transaction: a server-side cursor would not survive here.
assert len(list(Order.objects.filter(pk=order.pk).iterator(chunk_size=1))) == 1
assert_ledger_balanced()

# Card limits: every check-and-record of one key waits for the transaction-level advisory lock
# of the one before, across PgBouncer's shared server connections.
purchase = Purchase(account=user.account, amount_eur=Decimal(1), numbers={"+525512345678": 1})
spans, errors = [], []

def checkout():
    try:
        with transaction.atomic():
            purchase_lock(purchase)
            started = time.monotonic()
            time.sleep(0.3)  # work done holding the lock (not a wait): two at once would overlap
            spans.append((started, time.monotonic()))
    except Exception as exc:
        errors.append(repr(exc))
    finally:
        connection.close()

threads = [threading.Thread(target=checkout) for _ in range(4)]
for thread in threads:
    thread.start()
for thread in threads:
    thread.join(60)
assert errors == [], errors
spans.sort()
assert len(spans) == 4 and all(a[1] <= b[0] for a, b in zip(spans, spans[1:])), spans
# Released with each commit: nothing is left held on a server connection.
with transaction.atomic(), connection.cursor() as cursor:
    cursor.execute(  # this database's: another run's tests may hold theirs meanwhile
        "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND database ="
        " (SELECT oid FROM pg_database WHERE datname = current_database())"
    )
    assert cursor.fetchone()[0] == 0
print("through pgbouncer: ok")
"""


@pytest.mark.integration
@pytest.mark.django_db(transaction=True)
def test_an_order_and_the_card_limits_locks_work_through_a_real_pgbouncer(pgbouncer):
    params = connection.get_connection_params()
    url = f"postgres://{params['user']}@127.0.0.1:{pgbouncer}/{params['dbname']}"
    result = run(
        THROUGH_PGBOUNCER,
        {
            "DATABASE_URL": url,
            "DATABASE_PGBOUNCER": "true",
            "REDIS_URL": os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/15"),
        },
    )
    assert result.returncode == 0, result.stdout + result.stderr[-3000:]
    assert "through pgbouncer: ok" in result.stdout


# -- logs ----------------------------------------------------------------------------------


def test_json_lines_carry_the_request_id_and_extra_fields():
    record = logging.LogRecord(
        "orders.services", logging.INFO, __file__, 1, "order %s", ("o1",), None
    )
    record.order = "o1"
    with request_id_bound("req-abc"):
        RequestIdLogFilter().filter(record)
    line = json.loads(JsonFormatter().format(record))
    assert line["message"] == "order o1"
    assert line["request_id"] == "req-abc"
    assert line["level"] == "INFO" and line["logger"] == "orders.services"
    assert line["order"] == "o1"
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", line["time"])


def test_a_task_published_during_a_request_carries_its_id_in_the_headers():
    headers: dict = {}
    _request_id_publish(headers=headers)
    assert headers == {}  # outside a request: nothing
    with request_id_bound("req-xyz"):
        _request_id_publish(headers=headers)
    assert headers == {"request_id": "req-xyz"}


def test_production_logs_json_and_local_logs_lines_for_people():
    code = SHOW + "print(s.LOG_FORMAT, s.LOGGING['handlers']['console']['formatter'])"
    production = run(
        code,
        {
            "DJANGO_SETTINGS_MODULE": "reseller.settings.production",
            "SECRET_KEY": "x7Hq2-very-long-random-production-secret-value-0123456789-abcdef",
        },
    )
    assert production.stdout.split() == ["json", "json"], production.stderr
    local = run(code, {"DJANGO_SETTINGS_MODULE": "reseller.settings.local"})
    assert local.stdout.split() == ["human", "plain"], local.stderr
    wrong = run(code, {"LOG_FORMAT": "xml"})
    assert wrong.returncode != 0 and "LOG_FORMAT" in wrong.stderr


@pytest.mark.django_db(transaction=True)
def test_an_order_placed_through_the_api_logs_its_request_id_in_the_task_too(
    caplog, django_capture_on_commit_callbacks
):
    """In-process (tests: tasks inline) the recharge task logs under the request's id; across
    processes the id travels in the task's headers (tests/test_observability.py)."""
    user = UserFactory()
    account_set_b2b(account=user.account, is_b2b=True)
    fund(user, "10")
    _key, plaintext = make_key(user, mode="live")
    product = ProductFactory(retail_price=Decimal("2.00"))
    client = client_for(plaintext)
    caplog.set_level(logging.INFO)
    caplog.handler.addFilter(RequestIdLogFilter())
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(
            "/api/v1/api-access/b2b/recharges",
            {
                "items": [
                    {
                        "productId": product.public_id,
                        "recipientNumber": "+525512345678",
                        "quantity": 1,
                    }
                ],
                "baseCurrency": "EUR",
            },
            HTTP_IDEMPOTENCY_KEY="ops-log-1",
            HTTP_X_REQUEST_ID="req-ops-log-1",
        )
    assert response.status_code == 201, response.content
    lines = {r.name: json.loads(JsonFormatter().format(r)) for r in caplog.records}
    assert lines["orders.services"]["request_id"] == "req-ops-log-1"
    assert lines["recharges.tasks"]["request_id"] == "req-ops-log-1"
    assert (
        "delivered" in lines["recharges.tasks"]["message"]
        or "success" in lines["recharges.tasks"]["message"]
    )
    assert_ledger_balanced()


@pytest.mark.django_db
def test_a_webhook_delivery_logs_its_event_with_the_request_id_of_its_drain(
    reseller, product, caplog, settings
):
    settings.WEBHOOK_ALLOW_PRIVATE_TARGETS = True
    receiver = Receiver().start()
    try:
        endpoint = endpoint_create(
            account=reseller.account, url=receiver.url, livemode=True, events=["recharge.delivered"]
        )
        fund(reseller, "20.00")
        process(place(reseller, product))
        caplog.set_level(logging.INFO, logger="webhooks.delivery")
        caplog.handler.addFilter(RequestIdLogFilter())
        with request_id_bound("req-hook-1"):
            assert endpoint_drain(endpoint.pk) == 1
    finally:
        receiver.stop()
    (record,) = [r for r in caplog.records if r.name == "webhooks.delivery"]
    line = json.loads(JsonFormatter().format(record))
    assert line["request_id"] == "req-hook-1"
    assert line["status_code"] == 200 and line["webhook_endpoint"] == endpoint.pk
    assert line["webhook_event"].startswith("evt_") and line["webhook_delivery"]


# -- traces: off costs nothing -----------------------------------------------------------------


def test_without_an_otlp_endpoint_nothing_of_opentelemetry_is_loaded():
    code = (
        "import sys, reseller.wsgi, reseller.celery; "
        "print(sorted(m for m in sys.modules if m.startswith('opentelemetry')))"
    )
    result = run(
        code,
        {
            "DJANGO_SETTINGS_MODULE": "reseller.settings.production",
            "SECRET_KEY": "x7Hq2-very-long-random-production-secret-value-0123456789-abcdef",
        },
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"
    # Set, the same import instruments Django (its middleware comes first).
    on = run(
        "import reseller.wsgi; from django.conf import settings; print(settings.MIDDLEWARE[0])",
        {
            "DJANGO_SETTINGS_MODULE": "reseller.settings.production",
            "SECRET_KEY": "x7Hq2-very-long-random-production-secret-value-0123456789-abcdef",
            "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:9",
        },
    )
    assert on.returncode == 0, on.stderr
    assert on.stdout.strip().startswith("opentelemetry.instrumentation.django"), on.stdout


_SEEN: list[str] = []


@shared_task
def _request_id_probe_task() -> None:
    _SEEN.append(current_request_id())


def test_an_in_process_task_on_a_thread_keeps_its_callers_request_id(settings):
    """Without a broker (make run) tasks run on a thread pool or a timer: in the caller's
    context, so their lines carry the request's id as a worker's would."""
    settings.CELERY_TASK_ALWAYS_EAGER = True
    settings.TASKS_IN_PROCESS_THREADED = True
    _SEEN.clear()
    with request_id_bound("req-thread"):
        enqueue(_request_id_probe_task)
        enqueue(_request_id_probe_task, countdown=0.05)
    wait_until(lambda: len(_SEEN) >= 2, timeout=10, what="both tasks to run", state=lambda: _SEEN)
    assert _SEEN == ["req-thread", "req-thread"]
