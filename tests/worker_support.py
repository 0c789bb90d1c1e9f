"""Real Celery worker processes on the test's queue and database: the environment they share,
and the one the worker drills and the observability tests start against a provider fake
(tests/fakes/reloadly.py)."""

import os
import uuid
from pathlib import Path

from tests.broker_support import BROKER
from tests.helpers import database_url
from tests.servers import CeleryWorker

ROOT = Path(__file__).resolve().parent.parent


def worker_env(queue: str, **extra: str) -> dict[str, str]:
    """The suite's environment, pointed at this run's database and the test's queue."""
    return {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "reseller.settings.test",
        "DATABASE_URL": database_url(),
        "CELERY_BROKER_URL": BROKER,
        "CELERY_QUEUE": queue,
        **extra,
    }


def started_worker(
    env: dict[str, str], *, listen: str, pool: str, concurrency: int, log: str = "worker"
) -> CeleryWorker:
    """A worker consuming ``listen``, its log in test-artifacts, once it is ready."""
    (ROOT / "test-artifacts").mkdir(exist_ok=True)
    path = ROOT / "test-artifacts" / f"{log}-{uuid.uuid4().hex[:6]}.log"
    worker = CeleryWorker(env, path, queue=listen, pool=pool, concurrency=concurrency)
    return worker.start().wait_ready()


def reloadly_worker(
    fake, queue: str, *, pool: str = "prefork", concurrency: int = 2, extra_env=None
) -> CeleryWorker:
    """A worker whose provider (by setting, no provider rows) is the Reloadly fake."""
    env = worker_env(
        queue,
        AIRTIME_PROVIDER="reloadly",
        RELOADLY_BASE_URL=fake.url,
        RELOADLY_AUTH_URL=fake.url,
        RELOADLY_CLIENT_ID="test",
        RELOADLY_CLIENT_SECRET="test",
        RELOADLY_TIMEOUT_SECONDS="5",
        **(extra_env or {}),
    )
    return started_worker(env, listen=queue, pool=pool, concurrency=concurrency)
