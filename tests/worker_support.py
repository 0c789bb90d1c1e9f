"""A real Celery worker process on the test's queue and database, against a provider fake
(tests/fakes/reloadly.py): what the worker drills and the observability tests start."""

import os
import signal
import subprocess
import sys
import uuid
from pathlib import Path

from tests.broker_support import BROKER
from tests.helpers import database_url
from tests.waiting import wait_until

ROOT = Path(__file__).resolve().parent.parent


class Worker:
    def __init__(self, fake, queue, *, pool="prefork", concurrency=2, extra_env=None):
        env = {
            **os.environ,
            "DJANGO_SETTINGS_MODULE": "reseller.settings.test",
            "DATABASE_URL": database_url(),
            "CELERY_BROKER_URL": BROKER,
            "CELERY_QUEUE": queue,
            "AIRTIME_PROVIDER": "reloadly",
            "RELOADLY_BASE_URL": fake.url,
            "RELOADLY_AUTH_URL": fake.url,
            "RELOADLY_CLIENT_ID": "test",
            "RELOADLY_CLIENT_SECRET": "test",
            "RELOADLY_TIMEOUT_SECONDS": "5",
            **(extra_env or {}),
        }
        self.log = open(ROOT / "test-artifacts" / f"worker-{uuid.uuid4().hex[:6]}.log", "w")  # noqa: SIM115 (closed in stop)
        self.process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "celery",
                "-A",
                "reseller",
                "worker",
                f"--pool={pool}",
                f"--concurrency={concurrency}",
                "-Q",
                queue,
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
        self._wait_ready()

    def _wait_ready(self, timeout=60):
        def ready() -> bool:
            if self.process.poll() is not None:
                raise RuntimeError(f"worker exited: {Path(self.log.name).read_text()[-2000:]}")
            return "ready." in Path(self.log.name).read_text()

        wait_until(ready, timeout=timeout, what="the worker's 'ready.'")

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
