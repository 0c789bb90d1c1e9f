"""Real servers a test starts: a production-settings gunicorn on a free port."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import urllib.request
import uuid
from collections.abc import Iterator, Sequence
from pathlib import Path

from tests.helpers import database_url, redis_forget
from tests.waiting import wait_until

ROOT = Path(__file__).resolve().parent.parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def gunicorn_serving(
    env_extra: dict,
    tmp_path: Path,
    name: str,
    *,
    workers: int = 1,
    host: str = "127.0.0.1",
    port: int | None = None,
    prefix: Sequence[str] = (),
) -> Iterator[int]:
    """A production-settings gunicorn (gunicorn.conf.py read, as deployed) on a free port, on
    this run's database; yields its port, then stops it gracefully (SIGTERM).

    ``host``, ``port`` and ``prefix`` start it elsewhere: ``prefix`` is the command it runs
    under (``ip netns exec NAME``: a host of its own, tests/netns_support.py)."""
    port = port or free_port()
    env = (
        {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "CELERY_"))}
        | {
            "DJANGO_SETTINGS_MODULE": "reseller.settings.production",
            "DATABASE_URL": database_url(),
            "SECRET_KEY": "drill-" + uuid.uuid4().hex * 2,
            "SECURE_SSL_REDIRECT": "false",
            "ALLOWED_HOSTS": "*",
            "CONN_MAX_AGE": "0",
            "LOG_LEVEL": "WARNING",
            # Its Redis keys apart from everyone's, removed when it stops (never a flush).
            "CACHE_KEY_PREFIX": f"drill-{uuid.uuid4().hex[:12]}",
        }
        | env_extra
    )
    log_path = tmp_path / f"{name}.log"
    log = log_path.open("w")
    proc = subprocess.Popen(
        [*prefix, str(Path(sys.executable).parent / "gunicorn"), "reseller.wsgi:application",
         "--bind", f"{host}:{port}", "--workers", str(workers), "--worker-class", "gthread",
         "--threads", "4", "--timeout", "60"],
        cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
    )  # fmt: skip

    def up() -> bool:
        try:
            with urllib.request.urlopen(f"http://{host}:{port}/healthz", timeout=2):
                return True
        except OSError:
            return False

    def answering() -> bool:
        assert proc.poll() is None, log_path.read_text()
        return up()

    try:
        wait_until(
            answering, timeout=30, what="gunicorn's /healthz", state=lambda: log_path.read_text()
        )
        yield port
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)
        log.close()
        if env.get("REDIS_URL"):
            redis_forget(env["REDIS_URL"], env["CACHE_KEY_PREFIX"])


class CeleryWorker:
    """A Celery worker process of the test's own, as docker-compose runs the processor
    (threads, a pooled connection per few threads) unless told otherwise. ``start`` returns at
    once (several start together); ``wait_ready`` waits for its "ready."; ``kill`` is the
    SIGKILL of the drills.

    ``stop`` ends it once the test is done with it, with the same SIGKILL: a warm shutdown
    (SIGTERM) spent about 2 s of every test on the prefork pool and the broker's last poll,
    and nothing a test checks comes from it (the drills show that a killed worker loses
    nothing and sends nothing twice)."""

    def __init__(
        self,
        env: dict,
        log_path: Path,
        *,
        queue: str,
        name: str | None = None,
        pool: str = "threads",
        concurrency: int = 4,
        prefix: Sequence[str] = (),
    ) -> None:
        self.log_path = log_path
        name = name or f"{queue}-{uuid.uuid4().hex[:4]}"
        self.command = [
            *prefix, sys.executable, "-m", "celery", "-A", "reseller", "worker",
            f"--pool={pool}", f"--concurrency={concurrency}", "-Q", queue, "--loglevel=INFO",
            "--without-gossip", "--without-mingle", "--without-heartbeat", "-n", name,
        ]  # fmt: skip
        self.env = env
        self.process: subprocess.Popen | None = None

    def start(self) -> CeleryWorker:
        with self.log_path.open("w") as log:
            self.process = subprocess.Popen(
                self.command, cwd=ROOT, env=self.env, stdout=log, stderr=subprocess.STDOUT,
                start_new_session=True,
            )  # fmt: skip
        return self

    def wait_ready(self, timeout: float = 60) -> CeleryWorker:
        process = self.process
        assert process is not None

        def ready() -> bool:
            text = self.log_path.read_text()
            assert process.poll() is None, f"worker exited: {text[-3000:]}"
            return "ready." in text

        wait_until(
            ready,
            timeout=timeout,
            what="the worker to start (its 'ready.')",
            state=lambda: self.log_path.read_text()[-3000:],
        )
        return self

    def kill(self) -> None:
        assert self.process is not None
        os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait(timeout=10)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.kill()
