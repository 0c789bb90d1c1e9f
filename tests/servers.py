"""Real servers a test starts: a production-settings gunicorn on a free port."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path

from tests.helpers import database_url, redis_forget

ROOT = Path(__file__).resolve().parent.parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def gunicorn_serving(
    env_extra: dict, tmp_path: Path, name: str, *, workers: int = 1
) -> Iterator[int]:
    """A production-settings gunicorn (gunicorn.conf.py read, as deployed) on a free port, on
    this run's database; yields its port, then stops it gracefully (SIGTERM)."""
    port = free_port()
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
        [str(Path(sys.executable).parent / "gunicorn"), "reseller.wsgi:application",
         "--bind", f"127.0.0.1:{port}", "--workers", str(workers), "--worker-class", "gthread",
         "--threads", "4", "--timeout", "60"],
        cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
    )  # fmt: skip

    def up() -> bool:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=2):
                return True
        except OSError:
            return False

    deadline = time.monotonic() + 30
    try:
        while not up():
            assert time.monotonic() < deadline and proc.poll() is None, log_path.read_text()
            time.sleep(0.2)
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
