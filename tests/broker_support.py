"""Publishing to the real broker (Redis) from a test, as the web process does in production:
a queue of the test's own, and the Celery app pointed at it. The fixtures are imported by
conftest.py for every test module."""

import uuid

import pytest
import redis
from django.conf import settings
from django.test import override_settings

from reseller.celery import app as celery_app
from tests.helpers import suite_redis_url

BROKER = suite_redis_url(settings.TEST_REDIS_DB_BROKER)


def reset_pools():
    """Forget cached broker connections so the next publish uses the current broker_url."""
    celery_app._pool = None
    celery_app.amqp._producer_pool = None


@pytest.fixture(name="queue")
def queue_fixture():
    name = f"test-{uuid.uuid4().hex[:10]}"
    yield name
    client = redis.Redis.from_url(BROKER)
    for key in client.scan_iter(f"*{name}*"):
        client.delete(key)


@pytest.fixture(name="publishing")
def publishing_fixture(queue):
    """Let this test process publish to the real broker instead of running tasks inline."""
    saved = {
        k: celery_app.conf[k] for k in ("task_always_eager", "broker_url", "task_default_queue")
    }
    celery_app.conf.update(task_always_eager=False, broker_url=BROKER, task_default_queue=queue)
    reset_pools()
    with override_settings(CELERY_TASK_ALWAYS_EAGER=False):
        yield
    celery_app.conf.update(saved)
    reset_pools()
