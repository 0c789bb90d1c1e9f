"""The provider fakes' HTTP server (tests/fakes/server.py): kept connections as the providers'
front ends keep them, whole requests on them, and an outage that closes them all."""

from __future__ import annotations

import http.client
import json
import socket
import threading

import pytest

from tests.fakes.reloadly import FakeReloadly
from tests.provider_support import telcel_topup
from tests.waiting import wait_until
from upstreams.adapters.base import ProviderConfig, ProviderResult, TransientError
from upstreams.adapters.reloadly import ReloadlyProvider

TOKEN = {"client_id": "id", "client_secret": "secret", "grant_type": "client_credentials"}
TOPUP = {
    "operatorId": 341,
    "amount": "100.00",
    "useLocalAmount": True,
    "customIdentifier": "rch_outage",
    "recipientPhone": {"countryCode": "MX", "number": "5512345678"},
}


@pytest.fixture
def fake():
    server = FakeReloadly().start()
    yield server
    server.stop()


def _connection(fake) -> http.client.HTTPConnection:
    return http.client.HTTPConnection("127.0.0.1", fake.port, timeout=5)


def _post(conn, path: str, body: dict, headers: dict | None = None) -> tuple[int, dict]:
    sent = {"Content-Type": "application/json", **(headers or {})}
    conn.request("POST", path, body=json.dumps(body), headers=sent)
    response = conn.getresponse()
    return response.status, json.loads(response.read() or b"{}")


def _adapter(fake, name: str) -> ReloadlyProvider:
    config = ProviderConfig(base_url=fake.url, auth_url=fake.url, client_id="id", client_secret="s")
    return ReloadlyProvider.from_config(config, name=name)


def _slow_topup(fake, conn, answered: list[int], delay: float = 0.5) -> threading.Thread:
    """A top-up on ``conn`` that the fake answers after ``delay`` seconds, started and in
    progress at the fake when this returns; its status lands in ``answered``."""
    _, body = _post(conn, "/oauth/token", TOKEN)
    auth = {"Authorization": f"Bearer {body['access_token']}"}
    fake.delay = delay
    call = threading.Thread(target=lambda: answered.append(_post(conn, "/topups", TOPUP, auth)[0]))
    call.start()
    wait_until(lambda: fake.active == 1, timeout=5, what="the top-up in progress")
    return call


def test_the_calls_of_an_adapter_share_one_kept_connection(fake):
    reloadly = _adapter(fake, "reloadly-kept")
    for n in range(5):
        sent = reloadly.send(telcel_topup(f"rch_kept{n}"))
        assert sent.status == ProviderResult.DELIVERED
    reloadly.balance()
    # A token and six calls: HTTP/1.0 answers would have taken seven connections.
    assert fake.server.accepted == 1


def test_a_body_the_fake_answers_without_reading_is_not_taken_for_the_next_request(fake):
    conn = _connection(fake)
    try:
        # Refused before its body is read (no token), then a token on the same connection.
        status, _ = _post(conn, "/topups", {"customIdentifier": "x" * 2_000})
        assert status == 401
        status, body = _post(conn, "/oauth/token", TOKEN)
        assert status == 200 and body["access_token"]
    finally:
        conn.close()
    assert fake.server.accepted == 1


def test_an_idle_kept_connection_does_not_hold_settle_up(fake):
    conn = _connection(fake)
    try:
        assert _post(conn, "/oauth/token", TOKEN)[0] == 200
        assert fake.settle(quiet=0.2, timeout=5)  # the connection stays open, idle
    finally:
        conn.close()


def test_settle_waits_for_a_request_taken_before_an_outage(fake):
    conn, answered = _connection(fake), []
    try:
        # Longer than the server's shutdown takes (its loop polls every half second).
        call = _slow_topup(fake, conn, answered, delay=1.5)
        fake.outage(True)
        assert fake.settle(quiet=0.1, timeout=5)
        assert answered == [200]  # settled only once it was answered
        call.join(5)
    finally:
        conn.close()


def test_an_outage_closes_idle_kept_connections_and_answers_the_call_in_progress(fake):
    idle, busy, answered = _connection(fake), _connection(fake), []
    try:
        assert _post(idle, "/oauth/token", TOKEN)[0] == 200
        call = _slow_topup(fake, busy, answered)
        fake.outage(True)
        call.join(5)
        assert answered == [200]  # taken before the outage: answered, as before
        # Both connections are closed by the fake: each reads the end of its stream.
        for conn in (idle, busy):
            assert conn.sock is None or conn.sock.recv(1) == b""
        with pytest.raises(ConnectionRefusedError):
            socket.create_connection(("127.0.0.1", fake.port), timeout=2)
        with pytest.raises(TransientError):
            _adapter(fake, "reloadly-outage").balance()
    finally:
        idle.close()
        busy.close()
