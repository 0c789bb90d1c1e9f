"""Webhooks on the embedded default (``make run``: SQLite): the delivery worker's reads and
writes, checked here on SQLite in a process of its own against a real receiver."""

import os
import subprocess
import sys
from pathlib import Path

from tests.fakes.receiver import Receiver

ROOT = Path(__file__).resolve().parent.parent

SCRIPT = """
import sys
import django
django.setup()
from django.core.management import call_command
call_command("migrate", verbosity=0)
from accounts.services import user_create
from webhooks.delivery import endpoint_drain
from webhooks.models import Delivery
from webhooks.services import endpoint_create, endpoint_send_test

user = user_create(email="embedded@example.com", password=None, is_b2b=True)
endpoint = endpoint_create(account=user.account, url=sys.argv[1], livemode=True)
for _ in range(3):
    endpoint_send_test(endpoint=endpoint)
endpoint_drain(endpoint.pk)
for delivery in Delivery.objects.order_by("id"):
    tries = list(delivery.tries.values_list("number", "status_code"))
    print(delivery.state, delivery.attempts, delivery.last_status_code,
          delivery.delivered_at is not None, delivery.next_attempt_at > delivery.created_at, tries)
"""


def test_deliveries_are_sent_and_recorded_on_sqlite(tmp_path):
    receiver = Receiver().start()
    try:
        receiver.answer_next(200, 500, 200)
        env = {
            **{k: v for k, v in os.environ.items() if not k.startswith("DJANGO_")},
            "DJANGO_SETTINGS_MODULE": "reseller.settings.local",
            "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}",
            "WEBHOOK_ALLOW_PRIVATE_TARGETS": "true",
            "WEBHOOK_DRAIN_LINGER_SECONDS": "0",
            # Tasks inline: a pool thread's drain could hold the lease (the script's drain
            # then returns at once) and still be sending when the script prints the rows.
            "TASKS_IN_PROCESS_THREADED": "false",
        }
        done = subprocess.run(
            [sys.executable, "-c", SCRIPT, receiver.url],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr[-3000:]
        assert len(receiver.requests) == 3
        assert done.stdout.splitlines() == [
            "succeeded 1 200 True False [(1, 200)]",
            "pending 1 500 False True [(1, 500)]",  # retried later
            "succeeded 1 200 True False [(1, 200)]",
        ]
    finally:
        receiver.stop()
