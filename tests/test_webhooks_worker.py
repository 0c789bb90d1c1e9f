"""Webhook delivery by a real Celery worker process, as docker-compose deploys it (its own
queue, thread pool), killed with SIGKILL in the middle of a delivery: the event still
arrives (at least once), signed, and the delivery ends succeeded."""

import uuid

import pytest
import redis
from django.conf import settings
from django.test import override_settings

from reseller.celery import app as celery_app
from tests.factories import UserFactory
from tests.fakes.receiver import Receiver
from tests.helpers import assert_ledger_balanced, fund, suite_redis_url
from tests.servers import CeleryWorker
from tests.waiting import wait_until
from tests.worker_support import started_worker, worker_env
from webhooks.models import Delivery
from webhooks.services import endpoint_create
from webhooks.signature import verify_signature
from webhooks.tasks import webhooks_sweep_task

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

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


def webhooks_worker(queue: str) -> CeleryWorker:
    """``celery worker --pool=threads -Q <queue>-webhooks``, as the webhooks service runs."""
    env = worker_env(
        queue,
        WEBHOOK_QUEUE=f"{queue}-webhooks",
        WEBHOOK_ALLOW_PRIVATE_TARGETS="true",
        WEBHOOK_TIMEOUT_SECONDS=str(TIMEOUT),
    )
    return started_worker(
        env, listen=f"{queue}-webhooks", pool="threads", concurrency=4, log="webhooks"
    )


def test_sigkill_mid_delivery_still_delivers(queue, publishing):
    receiver = Receiver().start()
    workers = []
    try:
        user = UserFactory()
        endpoint = endpoint_create(account=user.account, url=receiver.url, livemode=True)
        workers.append(webhooks_worker(queue))
        receiver.hang()
        fund(user, "25.00")  # wallet.credited, published to the worker at commit
        assert receiver.arrived.wait(30), "the worker never called the receiver"
        workers[0].kill()  # in the middle of the call: no answer was recorded
        receiver.release()
        delivery = Delivery.objects.get()
        assert delivery.state == "pending" and delivery.attempts == 0
        workers.append(webhooks_worker(queue))
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
