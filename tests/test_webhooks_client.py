"""The webhook sender's HTTP client (webhooks/client.py) against real receivers on 127.0.0.1:
kept connections, a connection the receiver closed while idle, TLS to the checked address
with the URL's name for SNI and the certificate, and long answers."""

import shutil
import socket
import ssl
import subprocess
from datetime import timedelta

import pytest

from tests.factories import UserFactory
from tests.fakes.receiver import Receiver
from webhooks import client
from webhooks.delivery import endpoint_drain
from webhooks.models import Delivery, DeliveryAttempt
from webhooks.services import endpoint_create, endpoint_send_test

pytestmark = pytest.mark.django_db

HOST = "hooks.example"


@pytest.fixture(autouse=True)
def private_ok(settings):
    settings.WEBHOOK_ALLOW_PRIVATE_TARGETS = True
    settings.WEBHOOK_TIMEOUT_SECONDS = 3.0
    client.kept.close_all()
    client._tls.cache_clear()
    yield
    client.kept.close_all()
    client._tls.cache_clear()


@pytest.fixture
def start():
    started: list[Receiver] = []

    def run(**options) -> Receiver:
        receiver = Receiver(**options).start()
        started.append(receiver)
        return receiver

    yield run
    for receiver in started:
        receiver.stop()


def send_tests(url: str, count: int) -> list[Delivery]:
    """``count`` test events to a new endpoint at ``url``, then one drain of it."""
    user = UserFactory()
    endpoint = endpoint_create(account=user.account, url=url, livemode=True)
    for _ in range(count):
        endpoint_send_test(endpoint=endpoint)
    endpoint_drain(endpoint.pk)
    return list(Delivery.objects.filter(endpoint=endpoint).order_by("id"))


def test_deliveries_to_one_endpoint_share_one_connection(start):
    receiver = start(keep_alive=True)
    deliveries = send_tests(receiver.url, 5)
    assert [d.state for d in deliveries] == ["succeeded"] * 5
    assert len(receiver.requests) == 5
    assert receiver.connections == 1


def test_a_connection_closed_while_idle_is_replaced_and_the_event_sent(start):
    """The receiver closes each connection after its answer without saying so: the next send
    finds the kept connection dead before any answer, and goes again on a new one."""
    receiver = start(keep_alive=True, drop_idle=True)
    deliveries = send_tests(receiver.url, 3)
    assert [(d.state, d.attempts) for d in deliveries] == [("succeeded", 1)] * 3
    assert len(receiver.requests) == 3
    assert receiver.connections == 3
    assert DeliveryAttempt.objects.filter(delivery__in=deliveries).count() == 3


def test_an_answer_in_http_1_0_closes_the_connection(start):
    receiver = start()
    deliveries = send_tests(receiver.url, 2)
    assert [d.state for d in deliveries] == ["succeeded"] * 2
    assert receiver.connections == 2
    assert client.kept.idle_connections() == 0


def test_a_long_answer_keeps_its_first_bytes_and_is_not_reused(start):
    receiver = start(keep_alive=True)
    receiver.payload = b"x" * (client.DRAIN_BYTES + 10_000)
    deliveries = send_tests(receiver.url, 2)
    assert [d.state for d in deliveries] == ["succeeded"] * 2
    heads = DeliveryAttempt.objects.filter(delivery__in=deliveries).values_list(
        "response_head", flat=True
    )
    assert [len(head) for head in heads] == [client.RESPONSE_HEAD_BYTES] * 2
    assert receiver.connections == 2  # the unread rest closed the first one


def test_a_connection_kept_past_its_idle_time_is_not_used_again(start, monkeypatch):
    monkeypatch.setattr(client, "KEEP_IDLE_SECONDS", 0.0)
    receiver = start(keep_alive=True)
    deliveries = send_tests(receiver.url, 3)
    assert [d.state for d in deliveries] == ["succeeded"] * 3
    assert receiver.connections == 3


def test_one_batch_of_mixed_answers_is_written_delivery_by_delivery(start):
    """One drain's answers are written together: each delivery gets its own state, status
    code, times and attempt row."""
    receiver = start(keep_alive=True)
    receiver.answer_next(200, 500, 200, 404)
    receiver.payload = b"fine"
    deliveries = send_tests(receiver.url, 4)
    assert [(d.state, d.attempts, d.last_status_code, d.last_error) for d in deliveries] == [
        ("succeeded", 1, 200, ""),
        ("pending", 1, 500, ""),
        ("succeeded", 1, 200, ""),
        ("pending", 1, 404, ""),
    ]
    assert [d.delivered_at is not None for d in deliveries] == [True, False, True, False]
    assert [d.next_attempt_at > d.created_at + timedelta(seconds=10) for d in deliveries] == [
        False,
        True,
        False,
        True,
    ]
    tries = [
        list(d.tries.values_list("number", "status_code", "response_head", "error"))
        for d in deliveries
    ]
    assert tries == [[(1, code, "fine", "")] for code in (200, 500, 200, 404)]
    assert receiver.connections == 1


def test_a_refused_connection_is_an_error_to_retry(start):
    with socket.socket() as unused:
        unused.bind(("127.0.0.1", 0))
        port = unused.getsockname()[1]
    (delivery,) = send_tests(f"http://127.0.0.1:{port}/hooks", 1)
    assert delivery.state == "pending" and delivery.attempts == 1
    assert delivery.last_error.startswith("ConnectionRefusedError")


# -- TLS ---------------------------------------------------------------------------------------


def openssl(*argv: str, cwd) -> None:
    subprocess.run(["openssl", *argv], cwd=cwd, check=True, capture_output=True)


@pytest.fixture(scope="module")
def certificates(tmp_path_factory):
    """A test authority, and certificates it signed for ``hooks.example`` and another name."""
    if shutil.which("openssl") is None:
        pytest.skip("openssl is not installed")
    folder = tmp_path_factory.mktemp("tls")
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    openssl(
        "req", "-x509", *ec, "-keyout", "ca.key", "-out", "ca.pem", "-days", "2",
        "-subj", "/CN=Reseller test authority",
        "-addext", "basicConstraints=critical,CA:TRUE",
        "-addext", "keyUsage=critical,keyCertSign,cRLSign",
        cwd=folder,
    )  # fmt: skip
    for name in (HOST, "other.example"):
        (folder / f"{name}.ext").write_text(
            f"subjectAltName=DNS:{name}\nbasicConstraints=CA:FALSE\n"
            "keyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth\n"
            "authorityKeyIdentifier=keyid\nsubjectKeyIdentifier=hash\n"
        )
        openssl(
            "req", *ec, "-keyout", f"{name}.key", "-out", f"{name}.csr", "-subj", f"/CN={name}",
            cwd=folder,
        )  # fmt: skip
        openssl(
            "x509", "-req", "-in", f"{name}.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
            "-CAcreateserial", "-out", f"{name}.pem", "-days", "2", "-extfile", f"{name}.ext",
            cwd=folder,
        )  # fmt: skip
    return folder


@pytest.fixture
def resolver(monkeypatch):
    """``hooks.example`` resolves to 127.0.0.1 (the system's resolver answers for it); every
    lookup of it is counted."""
    lookups: list[str] = []
    real = socket.getaddrinfo

    def getaddrinfo(host, port, *args, **kwargs):
        if host == HOST:
            lookups.append(host)
            return real("127.0.0.1", port, *args, **kwargs)
        return real(host, port, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    return lookups


def tls_receiver(start, certificates, name: str) -> Receiver:
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(certificates / f"{name}.pem", certificates / f"{name}.key")
    return start(keep_alive=True, tls=context, host=HOST)


def test_https_goes_to_the_checked_address_with_the_urls_name(
    start, certificates, resolver, settings
):
    settings.WEBHOOK_CA_FILE = str(certificates / "ca.pem")
    receiver = tls_receiver(start, certificates, HOST)
    deliveries = send_tests(receiver.url, 2)
    assert [d.state for d in deliveries] == ["succeeded"] * 2
    port = receiver.server.server_address[1]
    assert [r.headers["host"] for r in receiver.requests] == [f"{HOST}:{port}"] * 2
    assert receiver.sni == [HOST]  # one handshake, with the name
    assert receiver.connections == 1
    # One lookup when the endpoint was saved and one per send, the SSRF check's: the
    # connection goes to the address it checked, never to a second answer.
    assert resolver == [HOST] * 3


def test_a_certificate_for_another_name_is_refused(start, certificates, resolver, settings):
    settings.WEBHOOK_CA_FILE = str(certificates / "ca.pem")
    receiver = tls_receiver(start, certificates, "other.example")
    (delivery,) = send_tests(receiver.url, 1)
    assert delivery.state == "pending"
    assert "CERTIFICATE_VERIFY_FAILED" in delivery.last_error
    assert receiver.requests == []


def test_a_certificate_of_an_unknown_authority_is_refused(start, certificates, resolver):
    receiver = tls_receiver(start, certificates, HOST)  # certifi's authorities only
    (delivery,) = send_tests(receiver.url, 1)
    assert delivery.state == "pending"
    assert "CERTIFICATE_VERIFY_FAILED" in delivery.last_error
    assert receiver.requests == []
