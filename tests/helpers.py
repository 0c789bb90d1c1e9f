"""Helpers shared by the tests: assertions, authenticated clients, orders placed through the
real services. Fixtures live in conftest.py, factories in factories.py; no test module imports
another test module."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
import re
import struct
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from urllib.parse import parse_qs, urlparse, urlsplit

import psycopg
import time_machine
from django.db import connection, transaction
from django.test import TestCase
from rest_framework.test import APIClient

from orders.models import Order
from orders.pricing import LineRequest
from orders.services import order_place_with_wallet
from recharges.processor import recharge_process
from tests.factories import UserFactory, make_key
from wallet.models import LedgerEntry
from wallet.services import (
    ledger_post,
    sandbox_wallet_for_key,
    wallet_get_or_create,
    wallet_lock,
    wallet_topup_manual,
)


@contextmanager
def window_start(seconds: int) -> Iterator[None]:
    """Rate limits count in fixed windows (``reseller.ratelimit``): move the clock to the first
    second of the next ``seconds`` window, ticking on, so a test's hits never straddle two."""
    start = (int(time.time()) // seconds + 1) * seconds + 1
    with time_machine.travel(start, tick=True):
        yield


@contextmanager
def away_from_midnight(minutes: int = 10) -> Iterator[None]:
    """For tests that compare "today" (UTC) with rows they have just written: within
    ``minutes`` of midnight the clock moves to noon of the same day, ticking on, so the test
    never straddles two days. Anywhere else in the day it changes nothing."""
    now = datetime.now(UTC)
    into_day = now - now.replace(hour=0, minute=0, second=0, microsecond=0)
    margin = minutes * 60
    if margin <= into_day.total_seconds() <= 24 * 3600 - margin:
        yield
        return
    with time_machine.travel(now.replace(hour=12, minute=0, second=0, microsecond=0), tick=True):
        yield


def bearer(user) -> dict:
    """The Authorization header of a JWT as POST /auth/login issues it (for staff: after
    their second factor, as the login requires)."""
    from accounts.services import tokens_for

    return {"HTTP_AUTHORIZATION": f"Bearer {tokens_for(user).access_token}"}


def second_factor_login(client, user):
    """Log a staff user in as the admin login does: password and an enrolled authenticator.

    The session then carries the verified device (django-otp), as after a real login.
    """
    from django_otp import DEVICE_ID_SESSION_KEY

    from accounts.services import totp_device_enrol

    device = totp_device_enrol(user=user)
    client.force_login(user)
    session = client.session
    session[DEVICE_ID_SESSION_KEY] = device.persistent_id
    session.save()
    return client


def rfc6238(secret_b32: str, at: float | None = None) -> str:
    """An independent TOTP (SHA-1, 6 digits, 30 s): what an authenticator app computes."""
    key = base64.b32decode(secret_b32 + "=" * (-len(secret_b32) % 8))
    counter = int((time.time() if at is None else at) // 30)
    digest = hmac.new(key, struct.pack(">Q", counter), hashlib.sha1).digest()
    offset = digest[-1] & 0x0F
    code = (struct.unpack(">I", digest[offset : offset + 4])[0] & 0x7FFFFFFF) % 1_000_000
    return f"{code:06d}"


def secret_of(uri: str) -> str:
    """The base32 secret of an ``otpauth://totp/…`` URI."""
    return parse_qs(urlparse(uri).query)["secret"][0]


def assert_ledger_balanced():
    """Every test that moves money ends with this: cached balances equal their entries, and
    the books of the business agree with the recharges (docs/books.md)."""
    from checkout.books_check import books_check
    from wallet.selectors import ledger_mismatches

    assert ledger_mismatches() == []
    assert books_check() == []


def database_url() -> str:
    """This test run's database as a URL, for a process a test starts (it shares the data a
    transactional test commits)."""
    db = connection.settings_dict
    password = f":{db['PASSWORD']}" if db["PASSWORD"] else ""
    host = db["HOST"] or "127.0.0.1"
    return f"postgres://{db['USER']}{password}@{host}:{db['PORT'] or 5432}/{db['NAME']}"


def client_for(plaintext: str) -> APIClient:
    """An API client that sends this API key."""
    client = APIClient()
    client.credentials(HTTP_X_API_KEY=plaintext)
    return client


def assert_problem(response, status, code):
    assert response.status_code == status, response.content
    assert response["Content-Type"].startswith("application/problem+json")
    body = response.json()
    assert body["status"] == status
    assert body["code"] == code
    assert body["type"].endswith("/" + code)
    assert body["title"] and body["detail"]
    assert body["requestId"] == response["X-Request-Id"]
    return body


DELIVERS = "+525512345678"
REJECTS = "+525512349990"  # the simulator's permanent rejection


def fund(user, amount: str) -> None:
    wallet_topup_manual(account=user.account, amount=Decimal(amount))


def place(user, product, *, number=DELIVERS, quantity=1, wallet=None, livemode=True) -> Order:
    """An order paid from the wallet by the real service, as the checkout does."""
    with transaction.atomic():
        wallet = wallet or wallet_get_or_create(account=user.account)
        return order_place_with_wallet(
            account=user.account,
            wallet=wallet,
            livemode=livemode,
            channel=Order.Channel.WALLET,
            lines=[LineRequest(product=product, recipient_number=number, quantity=quantity)],
            currency="EUR",
            user=user,
        )


def funded_order(
    product, *, number=DELIVERS, quantity=1, funds: str = "100.00", user=None
) -> Order:
    """A new reseller (or ``user``) credited ``funds`` EUR, and one wallet order of
    ``quantity`` of ``product`` to ``number`` placed by the real service."""
    user = user or UserFactory()
    fund(user, funds)
    return place(user, product, number=number, quantity=quantity)


def process(order: Order) -> None:
    """Run the processor (built-in simulator) on every recharge of an order."""
    for recharge_id in order.recharges.values_list("pk", flat=True):
        recharge_process(recharge_id=recharge_id)


def sandbox_order(user, product, *, quantity=1) -> Order:
    key, _plaintext = make_key(user, mode="test")
    with transaction.atomic():
        wallet = wallet_lock(wallet_id=sandbox_wallet_for_key(key=key).pk)
        ledger_post(
            wallet=wallet,
            kind=LedgerEntry.Kind.TOPUP,
            amount=Decimal("50"),
            reference=f"sbx-{key.prefix}",
        )
    return place(user, product, quantity=quantity, wallet=wallet, livemode=False)


@contextmanager
def other_session() -> Iterator[psycopg.Connection]:
    """A second PostgreSQL session on the test database (autocommit), as another process
    holding locks would have; closed on leaving, which ends what it held."""
    params = connection.get_connection_params()
    dsn = psycopg.conninfo.make_conninfo(
        **{k: v for k, v in params.items() if k in ("host", "port", "user", "dbname", "password")}
    )
    with psycopg.connect(dsn, autocommit=True) as session:
        yield session


def link_in(message, prefix: str) -> str:
    """The path of the site's link starting with ``prefix`` in an email's plain text."""
    found = re.search(rf"https?://[^/\s]+({re.escape(prefix)}\S+/)", message.body)
    assert found, message.body
    return found.group(1)


def sign_up(client, email: str, password: str = "a-long-passphrase-42", **fields) -> None:
    """Sign up on the site and open the confirmation link of the email: logged in after."""
    from django.core import mail

    sent = len(mail.outbox)
    with TestCase.captureOnCommitCallbacks(execute=True):  # the outbox sends after the commit
        response = client.post(
            "/accounts/signup/",
            {"email": email, "password1": password, "password2": password, **fields},
        )
    assert response.status_code == 302, response.content
    link = link_in(mail.outbox[sent], "/accounts/signup/confirm/")
    assert client.post(link).status_code == 302


def suite_redis_url(db: int) -> str:
    """One of the suite's Redis databases (``reseller.settings.test``: TEST_REDIS_*)."""
    from django.conf import settings

    return f"{settings.TEST_REDIS_SERVER.rstrip('/')}/{db}"


def redis_forget(url: str, prefix: str) -> int:
    """Delete the keys a process the test started wrote under ``prefix`` (never a flush: the
    database may hold other runs' keys). Returns how many went."""
    import redis

    client = redis.Redis.from_url(url)
    gone = 0
    try:
        batch = []
        for key in client.scan_iter(match=f"{prefix}*", count=1000):
            batch.append(key)
            if len(batch) == 500:
                gone += client.delete(*batch)
                batch = []
        if batch:
            gone += client.delete(*batch)
    finally:
        client.close()
    return gone


_SETTINGS_OF_A_PROCESS = """
import django, json, os, sys
os.environ["DJANGO_SETTINGS_MODULE"] = "reseller.settings.test"
django.setup()
from django.conf import settings
print(json.dumps({name: getattr(settings, name) for name in sys.argv[1:]}))
"""


def settings_in_a_process(env: dict[str, str | None], *names: str) -> dict:
    """Settings as a fresh process started with ``env`` reads them (those computed from
    others when the settings module loads, which override_settings cannot show). A None value
    removes that variable."""
    merged = {**os.environ, **env}
    done = subprocess.run(
        [sys.executable, "-c", _SETTINGS_OF_A_PROCESS, *names],
        env={name: value for name, value in merged.items() if value is not None},
        check=True,
        capture_output=True,
        text=True,
        timeout=60,
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def on_the_embedded_default(
    script: str, database, *args: str, env: dict[str, str], timeout: float = 120
) -> subprocess.CompletedProcess:
    """Run ``script`` (``python -c``, from the project's folder) as ``make run`` runs the
    code: ``reseller.settings.local`` on an SQLite database at ``database``, none of the
    suite's Django or Celery settings, ``env`` added. The test fails with the script's
    stderr unless it exits 0."""
    inherited = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "CELERY_"))}
    done = subprocess.run(
        [sys.executable, "-c", script, *args],
        cwd=Path(__file__).resolve().parent.parent,
        env={
            **inherited,
            "DJANGO_SETTINGS_MODULE": "reseller.settings.local",
            "DATABASE_URL": f"sqlite:///{database}",
            **env,
        },
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done


def typed_in(location: str, *typed: str) -> list[str]:
    """The query values of a redirect that hold any of ``typed`` (the product's id in
    ``fields_for`` and the fragment are random letters and digits: left out)."""
    query = parse_qs(urlsplit(location).query)
    values = [v for name, vs in query.items() if name != "fields_for" for v in vs]
    return [v for v in values if any(t in v for t in typed)]


def pids_waiting_on_locks(
    watcher: psycopg.Connection, *, besides: tuple[int, ...] = ()
) -> list[int]:
    """The backends of this database that wait on a lock, other than the watcher's own and
    ``besides``: what a concurrency test waits for before it lets the holder go. The watcher
    is an autocommit connection, so each call sees pg_stat_activity afresh."""
    rows = watcher.execute(
        "SELECT pid FROM pg_stat_activity WHERE datname = current_database() "
        "AND wait_event_type = 'Lock' AND pid <> pg_backend_pid() AND NOT (pid = ANY(%s))",
        [list(besides)],
    ).fetchall()
    return [row[0] for row in rows]


def table_reads(queries, *tables: str) -> list[str]:
    """The SELECTs among ``queries`` (a ``CaptureQueriesContext``'s ``captured_queries``)
    that read from a table whose name starts with one of ``tables``."""
    return [
        q["sql"]
        for q in queries
        if q["sql"].lstrip().upper().startswith("SELECT")
        and any(f'FROM "{table}' in q["sql"] for table in tables)
    ]
