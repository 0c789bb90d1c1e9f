"""No database transaction is open while Stripe is called (docs/payments.md): lock, decide,
record the intent, commit; call Stripe; apply the answer under the lock.

A proxy in front of localstripe asks PostgreSQL, at the moment each Stripe request arrives,
whether any other connection of the test database sits inside a transaction (which is what
holding a row lock needs). Real HTTP, real PostgreSQL; nothing of ours is mocked.
"""

from __future__ import annotations

import threading
from decimal import Decimal
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import psycopg
import pytest
import requests
from django.db import connection
from rest_framework.test import APIClient

from checkout import services as card
from payments.models import Payment
from tests.card_support import (
    SECRET_KEY,
    stripe_settings,
)
from tests.factories import ProductFactory, UserFactory
from tests.helpers import assert_ledger_balanced, bearer

IN_TRANSACTION = """
    SELECT count(*) FROM pg_stat_activity
    WHERE datname = current_database() AND pid <> pg_backend_pid()
      AND state LIKE 'idle in transaction%%'
"""


class LockWatchingProxy:
    """Forwards to localstripe; records (method, path, connections in a transaction)."""

    def __init__(self, upstream: str, dsn: str) -> None:
        self.upstream = upstream
        self.dsn = dsn
        self.seen: list[tuple[str, str, int]] = []
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            def _forward(self):
                with psycopg.connect(proxy.dsn, autocommit=True) as conn:
                    busy = conn.execute(IN_TRANSACTION).fetchone()[0]
                proxy.seen.append((self.command, self.path.split("?")[0], busy))
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else None
                headers = {
                    k: v
                    for k, v in self.headers.items()
                    if k.lower() not in ("host", "content-length", "connection")
                }
                answer = requests.request(
                    self.command,
                    proxy.upstream + self.path,
                    data=body,
                    headers=headers,
                    timeout=10,
                )
                self.send_response(answer.status_code)
                for key, value in answer.headers.items():
                    if key.lower() not in ("content-length", "transfer-encoding", "connection"):
                        self.send_header(key, value)
                self.send_header("Content-Length", str(len(answer.content)))
                self.end_headers()
                self.wfile.write(answer.content)

            do_GET = do_POST = do_DELETE = _forward

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def stop(self) -> None:
        self.server.shutdown()


@pytest.fixture
def watched_stripe(settings, localstripe):
    params = connection.get_connection_params()
    dsn = psycopg.conninfo.make_conninfo(
        **{k: v for k, v in params.items() if k in ("host", "port", "user", "dbname", "password")}
    )
    proxy = LockWatchingProxy(localstripe.url, dsn)
    stripe_settings(settings, localstripe)
    settings.STRIPE_API_BASE = proxy.url  # the gateway's client is keyed by its base address
    yield proxy, localstripe
    proxy.stop()


@pytest.mark.django_db(transaction=True)
def test_prepare_checkout_webhook_and_refund_call_stripe_with_no_transaction_open(
    watched_stripe,
):
    proxy, localstripe = watched_stripe
    product = ProductFactory(retail_price=Decimal("5.00"))
    client = APIClient()
    client.credentials(**bearer(UserFactory()))
    body = client.post(
        "/api/v1/payments/prepare",
        {
            "items": [
                {"productId": product.public_id, "recipientNumber": "+525512349990", "quantity": 1},
                {"productId": product.public_id, "recipientNumber": "+525512345678", "quantity": 1},
            ],
            "baseCurrency": "EUR",
        },
        format="json",
    ).json()
    localstripe.browser_confirm_setup(body["setupClientSecret"])
    answer = client.post("/api/v1/payments/checkout", {"paymentId": body["paymentId"]})
    assert answer.status_code == 200, answer.content
    payment = Payment.objects.get(public_id=body["paymentId"])
    # The recharge to ...9990 is refused by the simulator: its refund goes back to the card.
    assert payment.status == "partially_refunded"
    assert payment.recharges.get(recipient_number="+525512349990").card_refund_id.startswith("re_")
    intent = requests.get(
        f"{localstripe.url}/v1/payment_intents/{payment.payment_intent_id}",
        auth=(SECRET_KEY, ""),
        timeout=5,
    ).json()
    event = {
        "id": "evt_locks_1",
        "type": "payment_intent.succeeded",
        "data": {"object": intent},
    }
    assert card.stripe_event_handle(event=event) is True

    paths = {path for _method, path, _busy in proxy.seen}
    assert {"/v1/setup_intents", "/v1/payment_intents", "/v1/refunds"} <= paths
    assert f"/v1/payment_intents/{payment.payment_intent_id}" in paths  # the webhook's check
    assert [seen for seen in proxy.seen if seen[2]] == []
    assert_ledger_balanced()
