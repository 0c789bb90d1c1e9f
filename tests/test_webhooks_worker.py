"""Webhook delivery by a real Celery worker process, as docker-compose deploys it (its own
queue, thread pool), killed with SIGKILL in the middle of a delivery: the event still
arrives (at least once), signed, and the delivery ends succeeded."""

import os
import signal
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
import redis
from django.conf import settings
from django.test import override_settings

from reseller.celery import app as celery_app
from tests.factories import UserFactory
from tests.fakes.receiver import Receiver
from tests.helpers import assert_ledger_balanced, database_url, fund, suite_redis_url
from tests.waiting import wait_until
from webhooks.models import Delivery
from webhooks.services import endpoint_create
from webhooks.signature import verify_signature
from webhooks.tasks import webhooks_sweep_task

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

ROOT = Path(__file__).resolve().parent.parent
BROKER = suite_redis_url(settings.TEST_REDIS_DB_BROKER)
TIMEOUT = 2  # WEBHOOK_TIMEOUT_SECONDS of the worker: its lease lasts 2 * 2 + 10 s


@pytest.fixture
def queue():
    name = f"test-{uuid.uuid4().hex[:10]}"
    yield name
    client = redis.Redis.from_url(BROKER)
    for key in client.scan_iter(f"*{name}*"):
        client.delete(key)


@pytest.fixture
def publishing(queue, settings):
    settings.WEBHOOK_ALLOW_PRIVATE_TARGETS = True
    keys = ("task_always_eager", "broker_url", "task_default_queue", "task_routes")
    saved = {k: celery_app.conf[k] for k in keys}
    celery_app.conf.update(
        task_always_eager=False,
        broker_url=BROKER,
        task_default_queue=queue,
        task_routes={"webhooks.tasks.*": {"queue": f"{queue}-webhooks"}},
    )
    reset_pools()
    with override_settings(CELERY_TASK_ALWAYS_EAGER=False):
        yield
    celery_app.conf.update(saved)
    reset_pools()


def reset_pools():
    celery_app._pool = None
    celery_app.amqp._producer_pool = None


class Worker:
    """``celery worker --pool=threads -Q <queue>-webhooks``, as the webhooks service runs."""

    def __init__(self, queue):
        env = {
            **os.environ,
            "DJANGO_SETTINGS_MODULE": "reseller.settings.test",
            "DATABASE_URL": database_url(),
            "CELERY_BROKER_URL": BROKER,
            "CELERY_QUEUE": queue,
            "WEBHOOK_QUEUE": f"{queue}-webhooks",
            "WEBHOOK_ALLOW_PRIVATE_TARGETS": "true",
            "WEBHOOK_TIMEOUT_SECONDS": str(TIMEOUT),
        }
        (ROOT / "test-artifacts").mkdir(exist_ok=True)
        self.log = open(ROOT / "test-artifacts" / f"webhooks-{uuid.uuid4().hex[:6]}.log", "w")  # noqa: SIM115 (closed in stop)
        self.process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "celery",
                "-A",
                "reseller",
                "worker",
                "--pool=threads",
                "--concurrency=4",
                "-Q",
                f"{queue}-webhooks",
                "--loglevel=INFO",
                "--without-gossip",
                "--without-mingle",
                "--without-heartbeat",
                "-n",
                f"{queue}-{uuid.uuid4().hex[:4]}",
            ],
            cwd=ROOT,
            env=env,
            stdout=self.log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        process = self.process

        def ready() -> bool:
            if process.poll() is not None:
                raise RuntimeError(Path(self.log.name).read_text()[-2000:])
            return "ready." in Path(self.log.name).read_text()

        wait_until(
            ready,
            timeout=60,
            what="the worker's 'ready.'",
            state=lambda: Path(self.log.name).read_text()[-2000:],
        )

    def kill(self):
        os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait(timeout=10)

    def stop(self):
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.kill()
        self.log.close()


def test_sigkill_mid_delivery_still_delivers(queue, publishing):
    receiver = Receiver().start()
    workers = []
    try:
        user = UserFactory()
        endpoint = endpoint_create(account=user.account, url=receiver.url, livemode=True)
        workers.append(Worker(queue))
        receiver.hang()
        fund(user, "25.00")  # wallet.credited, published to the worker at commit
        assert receiver.arrived.wait(30), "the worker never called the receiver"
        workers[0].kill()  # in the middle of the call: no answer was recorded
        receiver.release()
        delivery = Delivery.objects.get()
        assert delivery.state == "pending" and delivery.attempts == 0
        workers.append(Worker(queue))
        # Once the dead worker's lease on the endpoint has run out, the sweeper wakes it.
        wait_until(
            lambda: webhooks_sweep_task() > 0,
            timeout=40,
            what="the sweeper to wake the endpoint once the lease ran out",
            every=0.2,  # each check runs a sweep: not too many
        )
        wait_until(
            lambda: Delivery.objects.get().state == "succeeded",
            timeout=30,
            what="the delivery to succeed",
        )
        requests = receiver.requests
        assert len(requests) == 2
        assert requests[0].json == requests[1].json  # the same event, again
        verify_signature(requests[1].body, requests[1].signature, endpoint.secret)
        assert requests[1].json["type"] == "wallet.credited"
        assert_ledger_balanced()
    finally:
        for worker in workers:
            worker.stop()
        receiver.stop()
