"""The service spread over several hosts: two web hosts and two worker hosts, each a set of
processes in a network namespace of its own (tests/netns_support.py), against one PostgreSQL
and one Redis, as docs/scaling.md and deploy/kubernetes/ describe it.

The hosts see PostgreSQL, Redis and the provider (the Reloadly fake) on the gateway's address
only, as on a real network: they cannot reach this machine's loopback. Resellers place
recharges through both web hosts at once; one worker host is killed (SIGKILL) while it has
work in flight; the other host and the sweeper finish everything. Each recharge reaches the
provider exactly once, each wallet is charged once per unit, and the books balance.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import urllib.error
import urllib.request
import uuid
from decimal import Decimal
from urllib.parse import urlsplit

import pytest
from django.conf import settings
from django.test import override_settings

from accounts.services import account_set_b2b
from orders.models import Order
from recharges.models import Recharge
from recharges.tasks import recharges_sweep_task
from tests.broker_support import BROKER
from tests.factories import ProductFactory, UserFactory, make_key
from tests.fakes.reloadly import FakeReloadly
from tests.helpers import assert_ledger_balanced, database_url, redis_forget, suite_redis_url
from tests.netns_support import Host, HostNetwork, TcpForwarder, host_network_unavailable, via
from tests.servers import CeleryWorker, gunicorn_serving
from tests.waiting import wait_until
from wallet.models import Wallet
from wallet.services import wallet_topup_manual

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

PG_PORT, REDIS_PORT, WEB_PORT = 5432, 6379, 8000
REQUESTS_PER_WEB_HOST = 10  # per reseller
UNITS_PER_REQUEST = 2
PRICE = Decimal("1.00")
FUNDS = Decimal("100.00")


@pytest.fixture
def network():
    reason = host_network_unavailable()
    if reason:
        pytest.skip(reason)
    net = HostNetwork()
    try:
        net.up()
        yield net
    finally:
        net.down()
        assert net.leftovers() == [], "a namespace or link of the run was left behind"


@pytest.fixture
def services(network):
    """PostgreSQL and Redis of this machine (loopback only) on the gateway's address."""
    pg, broker = settings.DATABASES["default"], urlsplit(BROKER)
    forwarder = TcpForwarder(
        [
            ((network.gateway, PG_PORT), (pg["HOST"] or "127.0.0.1", int(pg["PORT"] or 5432))),
            ((network.gateway, REDIS_PORT), (broker.hostname or "127.0.0.1", broker.port or 6379)),
        ]
    ).start()
    yield forwarder
    forwarder.stop()


@pytest.fixture
def provider(network):
    """The provider, on the network (the hosts reach it at the gateway's address)."""
    fake = FakeReloadly(host=network.gateway).start()
    fake.delay = 0.5  # each top-up takes a while: work is in flight when a host dies
    yield fake
    fake.stop()


@pytest.fixture
def host_env(network, services, provider, queue):
    """One environment for every host, as a ConfigMap and a Secret give every pod."""
    prefix = f"hosts-{uuid.uuid4().hex[:10]}"
    env = {
        "DJANGO_SETTINGS_MODULE": "reseller.settings.production",
        "SECRET_KEY": "hosts-" + uuid.uuid4().hex * 2,
        "DATABASE_URL": via(database_url(), network.gateway, PG_PORT),
        "REDIS_URL": via(suite_redis_url(settings.TEST_REDIS_DB_SERVERS), network.gateway),
        "CELERY_BROKER_URL": via(BROKER, network.gateway, REDIS_PORT),
        "CELERY_QUEUE": queue,
        "CACHE_KEY_PREFIX": prefix,  # one for all hosts: they share limits and provider slots
        "ALLOWED_HOSTS": "*",
        "SECURE_SSL_REDIRECT": "false",
        "EMAIL_URL": "consolemail://",
        "LOG_LEVEL": "WARNING",
        "AIRTIME_PROVIDER": "reloadly",
        "RELOADLY_BASE_URL": provider.url,
        "RELOADLY_AUTH_URL": provider.url,
        "RELOADLY_CLIENT_ID": "hosts",
        "RELOADLY_CLIENT_SECRET": "hosts",
        "RELOADLY_TIMEOUT_SECONDS": "10",
    }
    yield env
    redis_forget(via(env["REDIS_URL"], "127.0.0.1", REDIS_PORT), prefix)


def _worker_env(host_env: dict) -> dict:
    inherited = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "CELERY_"))}
    return inherited | host_env | {"DATABASE_POOL_SIZE": "2"}


@pytest.fixture
def hosts(network, host_env, queue, tmp_path):
    """Two worker hosts and two web hosts, started together; stopped (then their network)
    whatever the test's outcome."""
    web_hosts = [network.add_host("web1"), network.add_host("web2")]
    worker_hosts = [network.add_host("work1"), network.add_host("work2")]
    workers = [
        CeleryWorker(
            _worker_env(host_env),
            tmp_path / f"{host.name}.log",
            queue=queue,
            name=f"{host.name}@{network.run}",
            concurrency=4,
            prefix=host.prefix,
        )
        for host in worker_hosts
    ]
    servers = []
    try:
        for worker in workers:
            worker.start()
        for host in web_hosts:
            server = gunicorn_serving(
                host_env, tmp_path, host.name, host=host.address, port=WEB_PORT,
                prefix=host.prefix,
            )  # fmt: skip
            next(server)
            servers.append(server)
        for worker in workers:
            worker.wait_ready()
        yield {"web": web_hosts, "worker": worker_hosts, "workers": workers}
    finally:
        for worker in workers:
            worker.stop()
        for server in servers:
            server.close()  # runs gunicorn_serving's finally: SIGTERM, wait


def _reachable(host: Host, address: str, port: int) -> bool:
    """Whether a program on ``host`` can open a TCP connection to address:port."""
    probe = (
        "import socket,sys\n"
        "try:\n"
        f"    socket.create_connection(({address!r}, {port}), timeout=2).close()\n"
        "except OSError:\n"
        "    sys.exit(1)\n"
    )
    return subprocess.run([*host.prefix, sys.executable, "-c", probe], timeout=30).returncode == 0


def _post(host: Host, plaintext: str, body: dict, key: str) -> tuple[int, dict]:
    request = urllib.request.Request(
        f"http://{host.address}:{WEB_PORT}/api/v1/api-access/b2b/recharges",
        data=json.dumps(body).encode(),
        method="POST",
        headers={
            "x-api-key": plaintext,
            "Idempotency-Key": key,
            "Content-Type": "application/json",
        },
    )
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read() or b"{}")


def _statuses() -> dict[str, int]:
    counts: dict[str, int] = {}
    for status in Recharge.objects.values_list("status", flat=True):
        counts[status] = counts.get(status, 0) + 1
    return counts


def _reseller(name: str):
    user = UserFactory()
    account_set_b2b(account=user.account, is_b2b=True)
    wallet_topup_manual(account=user.account, amount=FUNDS)
    _key, plaintext = make_key(user, mode="live", name=name)
    return user, plaintext


def test_two_web_hosts_and_two_worker_hosts_deliver_each_recharge_once_when_one_dies(
    network, provider, hosts, publishing
):
    web1, web2 = hosts["web"]
    doomed, survivor = hosts["workers"]
    doomed_host, survivor_host = hosts["worker"]
    # Separate hosts indeed: the machine's PostgreSQL is reachable through the network only.
    assert not _reachable(web1, "127.0.0.1", PG_PORT)
    assert _reachable(web1, network.gateway, PG_PORT)

    # Which host each provider connection comes from (the fake listens on the network).
    peers: dict[str, int] = {}
    server = provider.server
    assert server is not None
    accept = server.process_request

    def counting(request, client_address):
        with provider.lock:
            peers[client_address[0]] = peers.get(client_address[0], 0) + 1
        accept(request, client_address)

    server.process_request = counting

    product = ProductFactory(retail_price=PRICE)
    resellers = [_reseller("Shop A"), _reseller("Shop B")]
    body = {
        "items": [
            {
                "productId": product.public_id,
                "recipientNumber": "+525512345678",
                "quantity": UNITS_PER_REQUEST,
            }
        ],
        "baseCurrency": "EUR",
    }
    answers: list[tuple[str, int, dict]] = []
    lock = threading.Lock()

    def place(web: Host, index: int) -> None:
        # Each reseller sends through both web hosts, alternately.
        for n in range(REQUESTS_PER_WEB_HOST):
            _user, plaintext = resellers[(n + index) % 2]
            status, answer = _post(web, plaintext, body, f"{web.name}-{n}")
            with lock:
                answers.append((web.name, status, answer))

    placing = [threading.Thread(target=place, args=(web, i)) for i, web in enumerate((web1, web2))]
    for thread in placing:
        thread.start()
    total = 2 * REQUESTS_PER_WEB_HOST * UNITS_PER_REQUEST

    # The doomed worker host is killed once it has delivered some, with calls in flight.
    def doomed_has_delivered() -> bool:
        return peers.get(doomed_host.address, 0) >= 1 and _statuses().get("delivered", 0) >= 6

    wait_until(
        doomed_has_delivered,
        timeout=40,
        what="the doomed host to deliver some",
        state=lambda: (peers, _statuses()),
    )
    doomed.kill()
    at_kill = _statuses()
    for thread in placing:
        thread.join(timeout=60)
    assert [status for _web, status, _answer in answers] == [201] * (2 * REQUESTS_PER_WEB_HOST), [
        (web, status, answer) for web, status, answer in answers if status != 201
    ]
    assert {web for web, _status, _answer in answers} == {"web1", "web2"}
    assert at_kill.get("delivered", 0) < total, "the kill came too late to prove anything"

    # What the dead host had sent still lands; then the sweeper (beat's, every 30 s; here at
    # once) sends its lost messages again and the surviving host finishes.
    assert provider.settle(), "the provider kept receiving calls"
    with override_settings(RECHARGE_STUCK_QUEUED_SECONDS=0, RECHARGE_STUCK_DISPATCHED_SECONDS=0):
        swept = recharges_sweep_task.apply().get()
    # The dead host had taken work it never finished: its messages are lost with it (Redis
    # would hand them out again only after the visibility timeout, an hour), so the sweeper
    # finds those recharges queued or dispatched.
    assert swept["queued"] + swept["dispatched"] >= 1, (swept, at_kill, peers)
    wait_until(
        lambda: _statuses() == {"delivered": total},
        timeout=40,
        what=f"all {total} delivered",
        state=_statuses,
    )
    assert survivor.process is not None and survivor.process.poll() is None

    # Every recharge reached the provider exactly once, from one of the two worker hosts.
    references = set(Recharge.objects.values_list("public_id", flat=True))
    assert len(references) == total
    assert set(provider.topups) == references
    assert all(provider.calls[ref] == 1 for ref in references), dict(provider.calls)
    assert set(peers) == {doomed_host.address, survivor_host.address}, peers
    # Each reseller paid once per unit placed, nothing refunded or doubled; books balance.
    assert Order.objects.count() == 2 * REQUESTS_PER_WEB_HOST
    for user, _plaintext in resellers:
        wallet = Wallet.objects.get(account=user.account, kind="live")
        units = Recharge.objects.filter(order__account=user.account).count()
        assert units == REQUESTS_PER_WEB_HOST * UNITS_PER_REQUEST
        assert wallet.balance == FUNDS - PRICE * units
    assert_ledger_balanced()
