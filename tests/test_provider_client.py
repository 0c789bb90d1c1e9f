"""The providers' HTTP client (upstreams/adapters/client.py): what it sends, the two failures
the adapters tell apart, and its kept connections under the worker's many threads."""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import pytest

from tests.provider_support import telcel_topup
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
        data += conn.recv(65536)
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


def test_a_burst_of_threads_keeps_its_connections_for_the_next_burst(reloadly):
    """The worker's shape: many threads call one provider at once through one client. Every
    call is answered, and each connection the first burst opened is kept for the second: a
    pool that keeps fewer than the threads (httpx's kept 50) opens them again."""
    reloadly.delay = 0.3  # every top-up in flight at once
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
        for call in calls:
            call.join(timeout=30)

    burst(0)
    opened = reloadly.server.accepted
    burst(threads)
    assert results == [ProviderResult.DELIVERED] * (2 * threads)
    assert opened <= threads + 1  # the token's connection, and one per thread at most
    assert reloadly.server.accepted == opened  # the second burst opened none
