"""Logs and traces as deployed: a production-settings gunicorn and a real Celery worker on
Redis, a recharge placed through the B2B API and delivered by a real HTTP provider fake.

- JSON logs (LOG_FORMAT=json): the web's line for the order and the worker's line for its
  recharge carry the same request id (it travels in the task's message headers).
- Traces (OTEL_EXPORTER_OTLP_ENDPOINT): a small OTLP/HTTP receiver of our own gets the spans
  of the API request, the task and the provider call, all of one trace id.
"""

import json
import threading
import uuid
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from decimal import Decimal
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
import requests
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

from accounts.services import account_set_b2b
from recharges.models import Recharge
from tests.broker_support import BROKER
from tests.factories import ProductFactory, UserFactory, make_key
from tests.helpers import assert_ledger_balanced, fund
from tests.servers import CeleryWorker, gunicorn_serving
from tests.waiting import wait_until
from tests.worker_support import reloadly_worker

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

ROOT = Path(__file__).resolve().parent.parent


class OtlpReceiver:
    """POST /v1/traces (OTLP/HTTP, protobuf), as a collector takes it: keeps every span as
    (service, trace id, span name, kind)."""

    def __init__(self) -> None:
        self.spans: list[dict] = []
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                if self.path != "/v1/traces":
                    self.send_response(404)
                    self.end_headers()
                    return
                export = ExportTraceServiceRequest()
                export.ParseFromString(body)
                for resource_spans in export.resource_spans:
                    attributes = {
                        a.key: a.value.string_value for a in resource_spans.resource.attributes
                    }
                    for scope_spans in resource_spans.scope_spans:
                        for span in scope_spans.spans:
                            receiver.spans.append(
                                {
                                    "service": attributes.get("service.name", ""),
                                    "trace_id": span.trace_id.hex(),
                                    "name": span.name,
                                    "kind": span.kind,
                                }
                            )
                answer = ExportTraceServiceResponse().SerializeToString()
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def receiver():
    server = OtlpReceiver()
    yield server
    server.stop()


@pytest.fixture
def fake():
    from tests.fakes.reloadly import FakeReloadly

    server = FakeReloadly().start()
    yield server
    server.stop()


@contextmanager
def deployed(fake, queue, tmp_path, extra: dict) -> Iterator[tuple[int, CeleryWorker]]:
    """A gunicorn (production settings) and a threaded worker publishing and consuming on the
    test's queue, both with ``extra`` in their environment."""
    (ROOT / "test-artifacts").mkdir(exist_ok=True)
    provider = {
        "AIRTIME_PROVIDER": "reloadly",
        "RELOADLY_BASE_URL": fake.url,
        "RELOADLY_AUTH_URL": fake.url,
        "RELOADLY_CLIENT_ID": "test",
        "RELOADLY_CLIENT_SECRET": "test",
    }
    worker = reloadly_worker(fake, queue, pool="threads", concurrency=4, extra_env=extra)
    web = gunicorn_serving(
        {
            **provider,
            **extra,
            "CELERY_BROKER_URL": BROKER,
            "CELERY_QUEUE": queue,
            "LOG_LEVEL": "INFO",
        },
        tmp_path,
        "web",
    )
    try:
        yield next(web), worker
    finally:
        web.close()
        worker.stop()


def place_through_the_api(port: int, request_id: str) -> Recharge:
    user = UserFactory()
    account_set_b2b(account=user.account, is_b2b=True)
    fund(user, "10")
    _key, plaintext = make_key(user, mode="live")
    product = ProductFactory(retail_price=Decimal("2.00"))
    response = requests.post(
        f"http://127.0.0.1:{port}/api/v1/api-access/b2b/recharges",
        json={
            "items": [
                {"productId": product.public_id, "recipientNumber": "+525512345678", "quantity": 1}
            ],
            "baseCurrency": "EUR",
        },
        headers={
            "X-Api-Key": plaintext,
            "Idempotency-Key": uuid.uuid4().hex,
            "X-Request-Id": request_id,
        },
        timeout=30,
    )
    assert response.status_code == 201, response.text
    assert response.headers["X-Request-Id"] == request_id
    recharge = Recharge.objects.get(public_id=response.json()["recharges"][0]["id"])
    wait_until(
        lambda: Recharge.objects.get(pk=recharge.pk).status == "delivered",
        timeout=30,
        what="the recharge delivered",
    )
    return recharge


def json_lines(path: Path) -> list[dict]:
    lines = []
    for line in path.read_text().splitlines():
        if line.startswith("{"):
            with suppress(ValueError):
                lines.append(json.loads(line))
    return lines


def test_the_request_id_follows_an_order_from_the_web_log_into_the_workers_log(
    fake, queue, tmp_path
):
    request_id = f"req-ops-{uuid.uuid4().hex[:8]}"
    with deployed(fake, queue, tmp_path, {"LOG_FORMAT": "json"}) as (port, worker):
        recharge = place_through_the_api(port, request_id)
        worker_log = worker.log_path

        def logged() -> bool:
            return any(
                line.get("logger") == "recharges.tasks" and line.get("request_id") == request_id
                for line in json_lines(worker_log)
            )

        wait_until(
            logged,
            timeout=15,
            what="the worker's log line with the request id",
            state=lambda: worker_log.read_text()[-3000:],
        )
    web = [
        line for line in json_lines(tmp_path / "web.log") if line.get("request_id") == request_id
    ]
    assert any(line["logger"] == "orders.services" for line in web), web
    task = [line for line in json_lines(worker_log) if line.get("request_id") == request_id]
    done = next(line for line in task if line["logger"] == "recharges.tasks")
    assert done["message"] == f"recharge {recharge.pk}: delivered"
    assert done["task_name"] == "recharges.tasks.recharge_process_task" and done["task_id"]
    assert_ledger_balanced()


def test_one_trace_from_the_api_request_through_the_task_to_the_provider_call(
    fake, queue, tmp_path, receiver
):
    otel = {"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.url, "OTEL_BSP_SCHEDULE_DELAY": "200"}
    with deployed(fake, queue, tmp_path, otel) as (port, _worker):
        place_through_the_api(port, f"req-ops-{uuid.uuid4().hex[:8]}")

        def server_span():
            return next(
                (
                    s
                    for s in receiver.spans
                    if s["service"] == "reseller-web" and "b2b/recharges" in s["name"]
                ),
                None,
            )

        trace_id = wait_until(
            server_span, timeout=20, what="the web's span", state=lambda: receiver.spans
        )["trace_id"]

        def of_trace() -> list[dict]:
            return [s for s in receiver.spans if s["trace_id"] == trace_id]

        def complete() -> bool:
            spans = of_trace()
            return any(
                s["service"] == "reseller-worker" and s["name"].startswith("run/") for s in spans
            ) and any(s["service"] == "reseller-worker" and s["name"] == "POST" for s in spans)

        wait_until(complete, timeout=20, what="the worker's spans of the trace", state=of_trace)
    spans = of_trace()
    names = {(s["service"], s["name"]) for s in spans}
    assert ("reseller-web", "apply_async/recharges.tasks.recharge_process_task") in names, names
    assert ("reseller-worker", "run/recharges.tasks.recharge_process_task") in names, names
    assert ("reseller-worker", "POST") in names, names  # the provider call (urllib3)
    # The database too (psycopg): the order's statements in the web, the task's in the worker.
    for service in ("reseller-web", "reseller-worker"):
        assert {(service, "INSERT"), (service, "UPDATE")} <= names, names
    assert_ledger_balanced()
