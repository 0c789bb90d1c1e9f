"""Fault drills: a dependency fails in the middle of real traffic.

1. PostgreSQL: the connection of a B2B request is killed (pg_terminate_backend) while the
   request waits on the wallet lock. It answers a clean problem (5xx), nothing is written,
   the ledger balances, and the next request is served.
2. Redis: a private redis-server behind a real gunicorn dies and comes back under load.
   Requests fail cleanly with 503 problem+json or proceed; nothing is charged twice or for a
   refused request; the per-key rate limit works again once Redis is back.

Each ends with check_ledger clean and every recharge of every accepted order accounted for.
(The worker SIGKILL drill belongs to the processor's tests.)
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import threading
import urllib.error
import urllib.request
from decimal import Decimal
from pathlib import Path

import psycopg
import pytest
from django.conf import settings
from django.core.management import call_command
from django.db import connection
from django.test import Client

from accounts.services import account_set_b2b, api_key_set_limits
from catalog import services as catalog_services
from orders.models import Order
from payments.models import Payment
from recharges.models import Recharge
from tests.factories import UserFactory, make_key
from tests.helpers import (
    assert_ledger_balanced,
    database_url,
    pids_waiting_on_locks,
    suite_redis_url,
)
from tests.servers import free_port, gunicorn_serving
from tests.waiting import WaitTimeout, wait_until
from wallet.models import LedgerEntry, Wallet
from wallet.services import wallet_topup_manual

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

ROOT = Path(__file__).resolve().parent.parent
PROBLEM = "application/problem+json"
RECIPIENT = "+525512345678"


def _product():
    country, _ = catalog_services.country_upsert(
        code="MX", name="Mexico", calling_code="+52", currency="MXN"
    )
    operator, _ = catalog_services.operator_upsert(country=country, slug="telcel", name="Telcel")
    product, _ = catalog_services.product_upsert(
        sku="DRILL-MX-100",
        operator=operator,
        name="Telcel 100 MXN",
        local_amount=Decimal("100"),
        local_currency="MXN",
        retail_price=Decimal("5.00"),
    )
    return product


def _reseller(funds: str = "100.00"):
    user = UserFactory()
    account_set_b2b(account=user.account, is_b2b=True)
    wallet_topup_manual(account=user.account, amount=Decimal(funds))
    key, plaintext = make_key(user, mode="live", name="Drill")
    return user, key, plaintext


def _body(product) -> dict:
    return {
        "items": [{"productId": product.public_id, "recipientNumber": RECIPIENT, "quantity": 1}],
        "baseCurrency": "EUR",
    }


def _recharges_accounted_for(orders: int) -> None:
    """One recharge per accepted unit, each in a state the processor or sweeper owns."""
    assert Recharge.objects.count() == orders
    known = {"queued", "dispatched", "waitlisted", "delivered", "failed"}
    assert set(Recharge.objects.values_list("status", flat=True)) <= known
    assert Payment.objects.count() == orders  # one charge per accepted order, never two


# -- 1. PostgreSQL connection killed mid-request -------------------------------------------


def test_killing_the_database_connection_of_a_waiting_b2b_request_writes_nothing():
    product = _product()
    user, _key, plaintext = _reseller()
    wallet = Wallet.objects.get(account=user.account, kind="live")
    entries_before = LedgerEntry.objects.count()
    outcome: dict = {}

    def request():
        client = Client(raise_request_exception=False)
        try:
            response = client.post(
                "/api/v1/api-access/b2b/recharges",
                _body(product),
                content_type="application/json",
                headers={"x-api-key": plaintext, "Idempotency-Key": "drill-pg-1"},
            )
            outcome["response"] = response
        finally:
            connection.close()  # this thread's (dead) connection

    with (
        psycopg.connect(database_url(), autocommit=False) as locker,
        psycopg.connect(database_url(), autocommit=True) as killer,  # sees fresh pg_stat_activity
    ):
        locker.execute("SELECT id FROM wallet_wallet WHERE id = %s FOR UPDATE", [wallet.pk])
        locker_pid = locker.info.backend_pid
        thread = threading.Thread(target=request)
        thread.start()
        try:
            waiting = wait_until(
                lambda: pids_waiting_on_locks(killer, besides=(locker_pid,)),
                timeout=15,
                what="the request to wait on the wallet lock",
            )
        except WaitTimeout:
            locker.rollback()
            thread.join(timeout=30)
            raise AssertionError(("the request never waited on the wallet lock", outcome)) from None
        killer.execute("SELECT pg_terminate_backend(%s)", [waiting[0]])
        locker.rollback()
        thread.join(timeout=30)

    response = outcome["response"]
    assert response.status_code in {500, 503}, response.content
    assert response.headers["Content-Type"].startswith(PROBLEM)
    assert response.json()["status"] == response.status_code
    assert b"Traceback" not in response.content

    wallet.refresh_from_db()
    assert wallet.balance == Decimal("100.00")
    assert LedgerEntry.objects.count() == entries_before
    assert Order.objects.count() == 0
    assert Payment.objects.count() == 0
    _recharges_accounted_for(0)
    assert_ledger_balanced()
    call_command("check_ledger")

    # The same Idempotency-Key retried at once: the key was taken in the first attempt's
    # transaction, which ended with its database session, so the retry runs now (no 409).
    retry = Client().post(
        "/api/v1/api-access/b2b/recharges",
        _body(product),
        content_type="application/json",
        headers={"x-api-key": plaintext, "Idempotency-Key": "drill-pg-1"},
    )
    assert retry.status_code == 201, retry.content
    placed = 1
    assert Payment.objects.count() == placed

    # The service goes on: a new request (new key) is served and charged once.
    fresh = Client().post(
        "/api/v1/api-access/b2b/recharges",
        _body(product),
        content_type="application/json",
        headers={"x-api-key": plaintext, "Idempotency-Key": "drill-pg-2"},
    )
    assert fresh.status_code == 201, fresh.content
    _recharges_accounted_for(placed + 1)
    assert_ledger_balanced()


# -- 2. Redis dies and comes back under a real gunicorn ------------------------------------


class Redis:
    """A private redis-server on a free port, stopped and started again on the same port."""

    def __init__(self, tmp: Path):
        self.port = free_port()
        self.tmp = tmp
        self.proc: subprocess.Popen | None = None

    def start(self) -> None:
        self.proc = subprocess.Popen(
            [shutil.which("redis-server"), "--port", str(self.port), "--bind", "127.0.0.1",
             "--save", "", "--appendonly", "no", "--dir", str(self.tmp)],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        wait_until(self._answers, timeout=10, what="redis-server to start")

    def _answers(self) -> bool:
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=0.5) as s:
                s.sendall(b"PING\r\n")
                return s.recv(16).startswith(b"+PONG")
        except OSError:
            return False

    def kill(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(timeout=10)


@pytest.fixture
def redis_server(tmp_path):
    if not shutil.which("redis-server"):
        pytest.skip("redis-server is not installed")
    server = Redis(tmp_path)
    server.start()
    yield server
    server.kill()


@pytest.fixture
def live_gunicorn(redis_server, tmp_path):
    env = {"REDIS_URL": f"redis://127.0.0.1:{redis_server.port}/0", "ALLOWED_HOSTS": "127.0.0.1"}
    for port in gunicorn_serving(env, tmp_path, "gunicorn"):
        yield f"http://127.0.0.1:{port}"


def _post(base: str, plaintext: str, body: dict, key: str) -> tuple[int, dict, dict]:
    request = urllib.request.Request(
        f"{base}/api/v1/api-access/b2b/recharges",
        data=json.dumps(body).encode(),
        method="POST",
        headers={
            "x-api-key": plaintext,
            "Idempotency-Key": key,
            "Content-Type": "application/json",
        },
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, dict(response.headers), json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, dict(error.headers), json.loads(error.read() or b"{}")


def test_redis_dying_under_load_fails_cleanly_charges_once_and_rate_limits_recover(
    redis_server, live_gunicorn
):
    product = _product()
    user, key, plaintext = _reseller(funds="1000.00")
    limit = 30
    api_key_set_limits(key=key, rate_limit_per_minute=limit, max_units_per_request=None)
    accepted: list[str] = []
    statuses: list[int] = []

    def burst(prefix: str, count: int) -> list[tuple[int, dict, dict]]:
        results: list[tuple[int, dict, dict]] = []
        lock = threading.Lock()

        def one(n: int):
            idem = f"{prefix}-{n}"
            status, headers, body = _post(live_gunicorn, plaintext, _body(product), idem)
            with lock:
                results.append((status, headers, body))
                statuses.append(status)
                if status == 201:
                    accepted.append(idem)

        threads = [threading.Thread(target=one, args=(n,)) for n in range(count)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=60)
        return results

    before = burst("up", 4)
    assert [s for s, _h, _b in before] == [201] * 4

    redis_server.kill()
    during = burst("down", 8)
    for status, headers, body in during:
        assert status in {201, 503}, (status, body)
        if status == 503:
            assert headers["Content-Type"].startswith(PROBLEM)
            assert body["code"] == "service_unavailable"

    # A refused request charged nothing: replaying it once Redis is back places it once.
    redis_server.start()
    refused = [f"down-{n}" for n in range(8) if f"down-{n}" not in accepted]
    for idem in refused[:2]:
        status, _h, body = _post(live_gunicorn, plaintext, _body(product), idem)
        assert status == 201, body
        accepted.append(idem)
    replay = _post(live_gunicorn, plaintext, _body(product), "up-0")
    assert replay[0] == 201 and replay[1].get("Idempotent-Replayed") == "true"

    # The rate limit counts again: past `limit` requests in the window, 429 with Retry-After.
    # The window is the clock's minute and a burst may straddle two of them: 2 x limit + 1
    # requests overflow one of the two, wherever the minute turns.
    after = burst("after", 2 * limit + 1)
    limited = [(s, h) for s, h, _b in after if s == 429]
    assert limited, [s for s, _h, _b in after]
    assert all("Retry-After" in h for _s, h in limited)
    assert {s for s, _h, _b in after} <= {201, 429}

    assert Order.objects.count() == len(accepted)
    wallet = Wallet.objects.get(account=user.account, kind="live")
    assert wallet.balance == Decimal("1000.00") - Decimal("5.00") * len(accepted)
    _recharges_accounted_for(len(accepted))
    assert_ledger_balanced()
    call_command("check_ledger")


def test_redis_killed_in_the_middle_of_requests_answers_503_charges_once_and_recovers(
    redis_server, live_gunicorn
):
    """Redis dies while requests are in flight (not between bursts): each answers 201 or a
    clean 503, a 503 charged nothing, and once Redis is back the same gunicorn serves again."""
    product = _product()
    # 6 clients x 40 requests x 5.00 EUR, and the retries: the wallet never runs dry.
    user, key, plaintext = _reseller(funds="2000.00")
    api_key_set_limits(key=key, rate_limit_per_minute=1000, max_units_per_request=None)
    results: dict[str, int] = {}
    lock = threading.Lock()
    stop = threading.Event()

    def client(worker: int) -> None:
        n = 0
        while not stop.is_set() and n < 40:
            idem = f"mid-{worker}-{n}"
            try:
                status, _headers, body = _post(live_gunicorn, plaintext, _body(product), idem)
            except OSError:
                status, body = 0, {}
            assert status in {201, 503, 0}, (status, body)
            with lock:
                results[idem] = status
            n += 1

    threads = [threading.Thread(target=client, args=(w,)) for w in range(6)]
    for thread in threads:
        thread.start()
    wait_until(lambda: len(results) >= 6, timeout=30, what="the clients' first answers")
    redis_server.kill()  # with requests in flight

    def answered_since(mark: int, status: int) -> bool:
        with lock:
            answered = list(results.values())[mark:]
        return status in answered or not any(thread.is_alive() for thread in threads)

    with lock:
        mark = len(results)
    wait_until(lambda: answered_since(mark, 503), timeout=30, what="a 503 while Redis is down")
    redis_server.start()  # returns once it answers PING
    with lock:
        mark = len(results)
    wait_until(lambda: answered_since(mark, 201), timeout=30, what="a 201 once Redis is back")
    stop.set()
    for thread in threads:
        thread.join(timeout=60)
    assert 503 in results.values() and 201 in results.values()

    # The same processes serve again, and every refused key, retried, is charged once.
    for idem, status in list(results.items()):
        if status != 201:
            retried, _h, body = _post(live_gunicorn, plaintext, _body(product), idem)
            assert retried == 201, body
            results[idem] = 201
    assert Order.objects.count() == len(results)
    wallet = Wallet.objects.get(account=user.account, kind="live")
    assert wallet.balance == Decimal("2000.00") - Decimal("5.00") * len(results)
    _recharges_accounted_for(len(results))
    assert_ledger_balanced()


# -- 3. A real reverse proxy (nginx) in front of gunicorn -----------------------------------

PROXY_ADDRESS = "127.0.0.9"  # nginx connects to gunicorn from here: the one trusted proxy
# The drill's login limit per address, in a window of a year: limits count in fixed windows,
# and a run must never straddle a window's end (it would start counting again).
PROXY_LOGIN_LIMIT = 5


@pytest.fixture
def gunicorn_behind_proxy(tmp_path):
    # The drill's own counters start empty: its server writes under a key prefix of its own.
    yield from gunicorn_serving(
        {
            "TRUSTED_PROXIES": PROXY_ADDRESS,
            "REDIS_URL": suite_redis_url(settings.TEST_REDIS_DB_SERVERS),
            "LOGIN_RATE_PER_ADDRESS": str(PROXY_LOGIN_LIMIT),
            "LOGIN_RATE_WINDOW_SECONDS": str(365 * 24 * 3600),
        },
        tmp_path,
        "gunicorn-proxied",
    )


@pytest.fixture
def nginx(gunicorn_behind_proxy, tmp_path):
    binary = shutil.which("nginx") or "/usr/sbin/nginx"
    if not Path(binary).exists():
        pytest.fail("nginx is not installed: scripts/setup.sh --browser installs it")
    port = free_port()
    temp = tmp_path / "nginx"
    temp.mkdir()
    user = "user root;" if os.geteuid() == 0 else ""
    (temp / "nginx.conf").write_text(
        f"""{user}
worker_processes 1;
daemon off;
pid {temp}/nginx.pid;
error_log {temp}/error.log warn;
events {{ worker_connections 64; }}
http {{
  access_log off;
  client_body_temp_path {temp}/body; proxy_temp_path {temp}/proxy;
  fastcgi_temp_path {temp}/fastcgi; uwsgi_temp_path {temp}/uwsgi; scgi_temp_path {temp}/scgi;
  server {{
    listen 127.0.0.1:{port};
    location / {{
      proxy_pass http://127.0.0.1:{gunicorn_behind_proxy};
      proxy_bind {PROXY_ADDRESS};
      proxy_set_header Host $host;
      proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
    }}
  }}
}}
"""
    )
    proc = subprocess.Popen(
        [binary, "-p", str(temp), "-c", str(temp / "nginx.conf")],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip

    def up() -> bool:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return True
        except OSError:
            return False

    try:
        wait_until(
            up, timeout=15, what="nginx to listen", state=lambda: (temp / "error.log").read_text()
        )
        yield port
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def _get_from(source: str, port: int, path: str, headers: dict) -> tuple[int, dict]:
    """GET from a chosen loopback source address (the client's "real" address)."""
    import http.client

    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=20, source_address=(source, 0))
    try:
        conn.request("GET", path, headers=headers)
        response = conn.getresponse()
        return response.status, json.loads(response.read() or b"{}")
    finally:
        conn.close()


def _login_from(source: str, port: int, email: str) -> int:
    import http.client

    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=20, source_address=(source, 0))
    try:
        body = json.dumps({"email": email, "password": "wrong-password"})
        conn.request(
            "POST", "/api/v1/auth/login", body=body, headers={"Content-Type": "application/json"}
        )
        response = conn.getresponse()
        response.read()
        return response.status
    finally:
        conn.close()


def test_behind_nginx_the_whitelist_and_limits_see_the_real_client_and_forgeries_do_not_pass(
    nginx, gunicorn_behind_proxy
):
    user, _key, _plaintext = _reseller()
    _listed, listed = make_key(user, mode="live", name="Listed", ip_whitelist=["127.0.0.2"])
    me = "/api/v1/auth/me"
    # Through the proxy, the whitelist sees the client's own address.
    assert _get_from("127.0.0.2", nginx, me, {"x-api-key": listed})[0] == 200
    status, body = _get_from("127.0.0.3", nginx, me, {"x-api-key": listed})
    assert (status, body.get("code")) == (403, "ip_not_allowed")
    # A forged header through the proxy: nginx appends the real peer, which is what counts.
    forged = {"x-api-key": listed, "X-Forwarded-For": "127.0.0.2"}
    assert _get_from("127.0.0.3", nginx, me, forged)[0] == 403
    # The same forgery sent straight to gunicorn, not from the proxy: the header is ignored.
    status, body = _get_from("127.0.0.3", gunicorn_behind_proxy, me, forged)
    assert (status, body.get("code")) == (403, "ip_not_allowed")
    # Login limits count per real client address: one address is cut off, another is not.
    statuses = [
        _login_from("127.0.0.4", nginx, f"x{n}@example.com") for n in range(PROXY_LOGIN_LIMIT)
    ]
    assert set(statuses) == {401}
    assert _login_from("127.0.0.4", nginx, "late@example.com") == 429
    assert _login_from("127.0.0.5", nginx, "other@example.com") == 401
