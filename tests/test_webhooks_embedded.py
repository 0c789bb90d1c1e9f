"""Webhooks on the embedded default (``make run``: SQLite): the delivery worker's reads and
writes, checked here on SQLite in a process of its own against a real receiver."""

from tests.fakes.receiver import Receiver
from tests.helpers import on_the_embedded_default

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
        done = on_the_embedded_default(
            SCRIPT,
            tmp_path / "db.sqlite3",
            receiver.url,
            env={
                "WEBHOOK_ALLOW_PRIVATE_TARGETS": "true",
                "WEBHOOK_DRAIN_LINGER_SECONDS": "0",
                # Tasks inline: a pool thread's drain could hold the lease (the script's drain
                # then returns at once) and still be sending when the script prints the rows.
                "TASKS_IN_PROCESS_THREADED": "false",
            },
        )
        assert len(receiver.requests) == 3
        assert done.stdout.splitlines() == [
            "succeeded 1 200 True False [(1, 200)]",
            "pending 1 500 False True [(1, 500)]",  # retried later
            "succeeded 1 200 True False [(1, 200)]",
        ]
    finally:
        receiver.stop()
