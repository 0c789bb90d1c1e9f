#!/usr/bin/env python
"""The request log's drain for the bench, as the deployed webhooks worker runs it: beat sends
``requestlog_drain_task`` every second, and the worker runs at nice 10 (docker-compose.yml).
Started by bench/run.py for the whole run, so every figure pays for writing the log as a
deployment does. On SIGTERM it writes what is left (at most a minute) and exits.
"""

from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "reseller.settings.production")

import django  # noqa: E402

django.setup()

from requestlog import redisqueue  # noqa: E402
from requestlog.tasks import requestlog_drain_task  # noqa: E402

stopping = False


def _stop(_signum, _frame) -> None:
    global stopping
    stopping = True


signal.signal(signal.SIGTERM, _stop)
while not stopping:
    requestlog_drain_task()
    time.sleep(1)
deadline = time.monotonic() + 60
while redisqueue.waiting() and time.monotonic() < deadline:
    if not requestlog_drain_task():
        time.sleep(0.2)
