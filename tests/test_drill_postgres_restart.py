"""Drill: PostgreSQL restarts under B2B load, clients retry (docs/security.md, "Drills").

A private PostgreSQL cluster (initdb on a free port, so the shared server of the other tests is
never touched) serves a real gunicorn. Clients place orders, each with its own Idempotency-Key,
and retry every failure with the same key; midway the server is restarted. Every key ends with
exactly one order and one debit, there is no storm of 409s (a claim whose session died is
taken over at once), and the ledger balances.
"""

from __future__ import annotations

import glob
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import urllib.error
import urllib.request
import uuid
from contextlib import suppress
from pathlib import Path

import psycopg
import pytest
from django.conf import settings

from tests.helpers import redis_forget, suite_redis_url
from tests.waiting import WaitTimeout, wait_until

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parent.parent
KEYS_PER_CLIENT = 10
CLIENTS = 5

SEED = """
import json
from decimal import Decimal
import django
django.setup()
from accounts.services import account_set_b2b, api_key_create, user_create
from catalog import services as catalog
from wallet.services import wallet_topup_manual
country, _ = catalog.country_upsert(code="MX", name="Mexico", calling_code="+52", currency="MXN")
operator, _ = catalog.operator_upsert(country=country, slug="telcel", name="Telcel")
product, _ = catalog.product_upsert(sku="DRILL-PG", operator=operator, name="Telcel 100",
    local_amount=Decimal("100"), local_currency="MXN", retail_price=Decimal("5.00"))
user = user_create(email="drill@example.com", password=None)
account_set_b2b(account=user.account, is_b2b=True)
wallet_topup_manual(account=user.account, amount=Decimal("1000.00"))
key, plaintext = api_key_create(account=user.account, user=user, name="drill", mode="live")
print(json.dumps({"product": product.public_id, "key": plaintext}))
"""


# The drill's Redis keys (its servers' cache, rate limits), apart from everyone's.
DRILL_PREFIX = f"drill-restart-{uuid.uuid4().hex[:12]}"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _as_postgres(args: list[str]) -> list[str]:
    """Run a server command as the postgres user when we are root (initdb refuses root)."""
    return ["runuser", "-u", "postgres", "--", *args] if os.geteuid() == 0 else args


class PrivatePostgres:
    def __init__(self) -> None:
        found = sorted(glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"))
        if not found:
            pytest.fail("PostgreSQL server binaries are missing (apt-get install postgresql)")
        self.bin = Path(found[-1]).parent
        self.root = Path(tempfile.mkdtemp(prefix="drill-pg-"))
        self.root.chmod(0o755)
        self.data = self.root / "data"
        self.port = _free_port()
        if os.geteuid() == 0:
            shutil.chown(self.root, "postgres", "postgres")
        self.url = f"postgres://postgres@127.0.0.1:{self.port}/drill"

    def run(self, *args: str) -> None:
        subprocess.run(_as_postgres(list(args)), check=True, capture_output=True, timeout=120)

    def init(self) -> None:
        self.run(str(self.bin / "initdb"), "-D", str(self.data), "-A", "trust", "-U", "postgres",
                 "--no-sync")  # fmt: skip
        self.start()
        with psycopg.connect(self.dsn("postgres"), autocommit=True) as conn:
            conn.execute("CREATE DATABASE drill")

    def dsn(self, db: str = "drill") -> str:
        return f"host=127.0.0.1 port={self.port} user=postgres dbname={db}"

    def start(self) -> None:
        options = f"-p {self.port} -k {self.root} -c listen_addresses=127.0.0.1 -c fsync=off"
        self.run(str(self.bin / "pg_ctl"), "-D", str(self.data), "-o", options, "-w",
                 "-l", str(self.root / "server.log"), "start")  # fmt: skip

    def restart(self) -> None:
        options = f"-p {self.port} -k {self.root} -c listen_addresses=127.0.0.1 -c fsync=off"
        self.run(str(self.bin / "pg_ctl"), "-D", str(self.data), "-o", options, "-m", "fast",
                 "-w", "-l", str(self.root / "server.log"), "restart")  # fmt: skip

    def stop(self) -> None:
        subprocess.run(
            _as_postgres([str(self.bin / "pg_ctl"), "-D", str(self.data), "-m", "immediate",
                          "-w", "stop"]),
            capture_output=True, timeout=60,
        )  # fmt: skip
        shutil.rmtree(self.root, ignore_errors=True)


@pytest.fixture
def private_postgres():
    server = PrivatePostgres()
    try:
        server.init()
        yield server
    finally:
        server.stop()


def _env(database_url: str) -> dict:
    return {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "CELERY_"))} | {
        "DJANGO_SETTINGS_MODULE": "reseller.settings.production",
        "DATABASE_URL": database_url,
        "REDIS_URL": suite_redis_url(settings.TEST_REDIS_DB_DRILL),
        "CACHE_KEY_PREFIX": DRILL_PREFIX,
        "SECRET_KEY": "drill-" + uuid.uuid4().hex * 2,
        "SECURE_SSL_REDIRECT": "false",
        "ALLOWED_HOSTS": "127.0.0.1",
        "CONN_MAX_AGE": "0",
        "LOG_LEVEL": "WARNING",
        "TASKS_IN_PROCESS_THREADED": "false",
        "AIRTIME_PROVIDER": "simulator",
    }


def _post(base: str, key: str, product: str, idem: str) -> int:
    body = {
        "items": [{"productId": product, "recipientNumber": "+525512345678", "quantity": 1}],
        "baseCurrency": "EUR",
    }
    request = urllib.request.Request(
        f"{base}/api/v1/api-access/b2b/recharges",
        data=json.dumps(body).encode(),
        method="POST",
        headers={"x-api-key": key, "Idempotency-Key": idem, "Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status
    except urllib.error.HTTPError as error:
        return error.code
    except OSError:
        return 0


def test_postgres_restarted_under_b2b_load_every_order_exactly_once_and_no_409_storm(
    private_postgres, tmp_path
):
    redis_forget(suite_redis_url(settings.TEST_REDIS_DB_DRILL), DRILL_PREFIX)
    env = _env(private_postgres.url)
    manage = [sys.executable, "manage.py"]
    subprocess.run([*manage, "migrate", "--noinput", "-v0"], cwd=ROOT, env=env, check=True,
                   timeout=300)  # fmt: skip
    seeded = subprocess.run(
        [sys.executable, "-c", SEED], cwd=ROOT, env=env, check=True, capture_output=True,
        text=True, timeout=120,
    )  # fmt: skip
    seed = json.loads(seeded.stdout.strip().splitlines()[-1])
    with psycopg.connect(private_postgres.dsn(), autocommit=True) as conn:
        conn.execute("UPDATE accounts_apikey SET rate_limit_per_minute = 100000")

    port = _free_port()
    log = (tmp_path / "gunicorn.log").open("w")
    gunicorn = subprocess.Popen(
        [str(Path(sys.executable).parent / "gunicorn"), "reseller.wsgi:application",
         "--bind", f"127.0.0.1:{port}", "--workers", "2", "--worker-class", "gthread",
         "--threads", "4", "--timeout", "60"],
        cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
    )  # fmt: skip
    base = f"http://127.0.0.1:{port}"
    statuses: list[int] = []
    done: list[str] = []
    lock = threading.Lock()
    try:

        def healthy() -> bool:
            try:
                urllib.request.urlopen(f"{base}/healthz", timeout=2)
            except OSError:
                return False
            return True

        wait_until(healthy, timeout=30, what="gunicorn's /healthz")
        down = threading.Event()  # the second half of each client's keys is sent from then on

        def client(worker: int) -> None:
            for n in range(KEYS_PER_CLIENT):
                idem = f"pg-{worker}-{n}"
                if n == KEYS_PER_CLIENT // 2:
                    down.wait(timeout=120)

                def placed() -> bool:
                    status = _post(base, seed["key"], seed["product"], idem)
                    with lock:
                        statuses.append(status)
                        if status == 201:
                            done.append(idem)
                    return status == 201

                # retry the same key until it is placed, as a client would (every 0.25 s)
                with suppress(WaitTimeout):  # given up: the check of ``done`` below says so
                    wait_until(placed, timeout=30, what=f"{idem} placed", every=0.25)

        threads = [threading.Thread(target=client, args=(w,)) for w in range(CLIENTS)]
        for thread in threads:
            thread.start()
        wait_until(lambda: len(done) >= CLIENTS, timeout=60, what="the load under way")
        restart_failed: list[BaseException] = []

        def restart() -> None:
            try:
                private_postgres.restart()  # under load
            except BaseException as error:
                restart_failed.append(error)

        restarting = threading.Thread(target=restart)
        restarting.start()

        def refused() -> bool:
            try:
                psycopg.connect(private_postgres.dsn(), connect_timeout=2).close()
            except psycopg.OperationalError:
                return True
            return not restarting.is_alive()  # too quick to see: its end will do

        wait_until(refused, timeout=120, what="PostgreSQL to go down for its restart")
        down.set()
        restarting.join(timeout=120)
        assert not restart_failed, restart_failed
        for thread in threads:
            thread.join(timeout=120)
    finally:
        os.killpg(gunicorn.pid, signal.SIGTERM)
        gunicorn.wait(timeout=30)
        redis_forget(suite_redis_url(settings.TEST_REDIS_DB_DRILL), DRILL_PREFIX)

    assert sorted(done) == sorted(
        f"pg-{w}-{n}" for w in range(CLIENTS) for n in range(KEYS_PER_CLIENT)
    )
    assert set(statuses) <= {201, 409, 503, 0}, sorted(set(statuses))
    assert {503, 0} & set(statuses), "the restart did not happen under load"
    assert statuses.count(409) <= len(done), statuses.count(409)  # no storm of 409s
    with psycopg.connect(private_postgres.dsn(), autocommit=True) as conn:
        orders = conn.execute("SELECT count(*) FROM orders_order").fetchone()[0]
        debits = conn.execute(
            "SELECT count(*) FROM wallet_ledgerentry WHERE kind = 'payment'"
        ).fetchone()[0]
        balance = conn.execute(
            "SELECT balance FROM wallet_wallet w JOIN accounts_account a ON a.id = w.account_id"
            " WHERE w.kind = 'live'"
        ).fetchone()[0]
    assert orders == debits == len(done)
    assert balance == 1000 - 5 * len(done)
    check = subprocess.run([*manage, "check_ledger"], cwd=ROOT, env=env, capture_output=True,
                           text=True, timeout=120)  # fmt: skip
    assert check.returncode == 0, check.stdout + check.stderr
