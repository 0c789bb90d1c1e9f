"""The providers' HTTP client (upstreams/adapters/client.py): what it sends, the two failures
the adapters tell apart, and its kept connections under the worker's many threads."""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import pytest

from tests.provider_support import telcel_topup
from tests.waiting import wait_until
from upstreams.adapters.base import ProviderConfig, ProviderResult, connection_refused
from upstreams.adapters.client import Client, NoAnswer, Unreachable
from upstreams.adapters.reloadly import ReloadlyProvider

ANSWER = (
    b'HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 11\r\n\r\n{"ok":true}'
)


@contextmanager
def peer(behave: Callable[[socket.socket], None]) -> Iterator[str]:
    """A TCP server on 127.0.0.1 that hands each connection to ``behave``: its base URL."""
    listener = socket.create_server(("127.0.0.1", 0))
    done = threading.Event()

    def serve() -> None:
        while not done.is_set():
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            with conn:
                behave(conn)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}"
    finally:
        done.set()
        listener.shutdown(socket.SHUT_RDWR)  # wakes the accept (Linux)
        listener.close()
        thread.join(timeout=5)


def read_request(conn: socket.socket) -> bytes:
    """The request's head and body (by its Content-Length)."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(65536)
        if not chunk:
            raise ConnectionResetError("the client hung up")
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    while len(body) < length:
        body += conn.recv(65536)
    return head + b"\r\n\r\n" + body


def test_it_sends_json_query_and_basic_auth_as_the_references_write_them():
    seen: list[bytes] = []

    def answer(conn: socket.socket) -> None:
        seen.append(read_request(conn))
        conn.sendall(ANSWER)

    with peer(answer) as url:
        answered = Client().post(
            f"{url}/topups",
            json={"amount": "10.50", "local": True},
            params={"countryIsos": ["MX", "CO"], "useLocalAmount": True, "page": 2},
            auth=("key", "sécret"),
            headers={"Accept": "application/json"},
            timeout=5,
        )
    assert answered.status_code == 200
    assert answered.json() == {"ok": True}
    assert answered.headers["content-type"] == "application/json"  # case-insensitive
    request = seen[0].decode()
    assert request.startswith(
        "POST /topups?countryIsos=MX&countryIsos=CO&useLocalAmount=true&page=2 HTTP/1.1\r\n"
    )
    assert "Content-Type: application/json\r\n" in request
    assert "Authorization: Basic a2V5OnPDqWNyZXQ=\r\n" in request  # "key:sécret" in UTF-8
    assert request.endswith('{"amount":"10.50","local":true}')


def test_a_refused_connection_is_unreachable_and_reads_as_refused():
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    listener.close()  # nothing listens there now
    with pytest.raises(Unreachable) as raised:
        Client().get(f"http://127.0.0.1:{port}/balance", timeout=2)
    assert connection_refused(raised.value)  # the circuit breaker's definite refusal


@pytest.mark.parametrize(
    "url",
    ["ftp://127.0.0.1/topups", "http://exa mple.com/topups", "http:///topups"],
)
def test_a_url_that_cannot_be_called_is_unreachable(url):
    with pytest.raises(Unreachable):
        Client().get(url, timeout=2)


def test_a_call_with_no_time_left_is_unreachable():
    with pytest.raises(Unreachable):
        Client().get("http://127.0.0.1:9/balance", timeout=0)


def test_a_header_that_cannot_be_sent_is_unreachable_and_nothing_leaves():
    seen: list[bytes] = []

    def answer(conn: socket.socket) -> None:
        conn.settimeout(1)
        try:
            seen.append(conn.recv(65536))
        except TimeoutError:
            seen.append(b"")

    with peer(answer) as url:
        with pytest.raises(Unreachable):
            Client().get(f"{url}/balance", headers={"api_key": "key\r\nX-Evil: 1"}, timeout=2)
        with pytest.raises(Unreachable):
            Client().get(f"{url}/balance", headers={"api_key": "clé€"}, timeout=2)
    assert seen in ([], [b""], [b"", b""]), seen  # no request bytes reached the peer


def test_a_request_read_and_never_answered_is_no_answer_timed_out():
    hold = threading.Event()

    def swallow(conn: socket.socket) -> None:
        read_request(conn)
        hold.wait(5)

    with peer(swallow) as url:
        with pytest.raises(NoAnswer) as raised:
            Client().post(f"{url}/topups", json={"a": 1}, timeout=0.3)
        hold.set()
    assert raised.value.timed_out
    assert not connection_refused(raised.value)


def test_a_connection_dropped_after_the_request_is_no_answer_not_timed_out():
    # The peer reads the request, then closes without a word.
    with peer(read_request) as url, pytest.raises(NoAnswer) as raised:
        Client().post(f"{url}/topups", json={"a": 1}, timeout=5)
    assert not raised.value.timed_out


def test_an_answer_too_long_to_read_is_no_answer():
    """http.client reads a body's length in one go: an absurd length raises OverflowError,
    which neither urllib3 nor http.client wraps. The request was received: never
    unreachable (that would send the top-up elsewhere)."""

    def absurd(conn: socket.socket) -> None:
        read_request(conn)
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 99999999999999999999\r\n\r\n{}")

    with peer(absurd) as url, pytest.raises(NoAnswer) as raised:
        Client().post(f"{url}/topups", json={"a": 1}, timeout=5)
    assert not raised.value.timed_out


def keep_alive(conns: list[socket.socket], closed: threading.Event | None = None):
    """A peer that answers every request on a connection until the client hangs up, or, with
    ``closed``, answers one and closes the connection (then sets ``closed``)."""

    def serve(conn: socket.socket) -> None:
        conns.append(conn)
        while True:
            try:
                read_request(conn)
            except (OSError, ValueError):
                return
            conn.sendall(ANSWER)
            if closed is not None:
                conn.shutdown(socket.SHUT_RDWR)
                closed.set()
                return

    return serve


def test_a_kept_connection_the_provider_closed_is_not_used_again():
    conns: list[socket.socket] = []
    closed = threading.Event()
    client = Client()
    with peer(keep_alive(conns, closed)) as url:
        assert client.get(f"{url}/balance", timeout=5).status_code == 200
        assert closed.wait(5)
        closed.clear()
        assert client.get(f"{url}/balance", timeout=5).status_code == 200  # a new connection
    assert len(conns) == 2


def test_a_connection_idle_for_its_expiry_is_not_used_again():
    """A kept connection is used again while fresh, and closed once idle for
    ``idle_seconds`` (a NAT may have dropped it silently): 0 here, so every call connects."""
    for idle, connections in ((60.0, 1), (0.0, 3)):
        conns: list[socket.socket] = []
        client = Client(idle_seconds=idle)
        with peer(keep_alive(conns)) as url:
            for _ in range(3):
                assert client.get(f"{url}/balance", timeout=5).json() == {"ok": True}
            client.pools.clear()  # hang up: the peer's loop ends
        assert len(conns) == connections, (idle, len(conns))


def test_a_burst_of_threads_keeps_its_connections_for_the_next_burst(reloadly):
    """The worker's shape: many threads call one provider at once through one client. Every
    call is answered, and each connection the first burst opened is kept for the second: a
    pool that keeps fewer than the threads (httpx's kept 50) opens them again."""
    reloadly.delay = 1.0  # long enough for every top-up of a burst to be in flight at once
    config = ProviderConfig(
        base_url=reloadly.url, auth_url=reloadly.url, client_id="id", client_secret="secret"
    )
    adapter = ReloadlyProvider.from_config(config, name="reloadly-burst", client=Client())
    adapter.balance()  # the token, fetched once beforehand
    threads = 80
    results: list[str] = []

    def send(n: int) -> None:
        results.append(adapter.send(telcel_topup(f"rch_burst{n}")).status)

    def burst(first: int) -> None:
        calls = [threading.Thread(target=send, args=(n,)) for n in range(first, first + threads)]
        for call in calls:
            call.start()
        # All at the fake at once: each on a connection of its own.
        wait_until(lambda: reloadly.active == threads, timeout=10, what="the whole burst")
        for call in calls:
            call.join(timeout=30)

    burst(0)
    opened = reloadly.server.accepted
    burst(threads)
    assert results == [ProviderResult.DELIVERED] * (2 * threads)
    assert opened == threads  # the token's, kept and taken by one thread, and 79 new ones
    assert reloadly.server.accepted == opened  # the second burst opened none
