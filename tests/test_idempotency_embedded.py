"""Idempotency-Key on the embedded default (``make run``: SQLite, one process): contract
section 5, "a replay while the first is still running is 409". SQLite runs one writing
transaction at a time, so the second request used to wait for the first to commit and replay
its answer; it is refused at once now, and replays once the first is done."""

from tests.helpers import on_the_embedded_default

SCRIPT = """
import django
django.setup()
from django.core.management import call_command
call_command("migrate", verbosity=0)
import threading
from orders.idempotency import ORDER_KEYS
from reseller.idempotency import IdempotencyKeyInUse
from tests.factories import UserFactory

account = UserFactory().account
started, release = threading.Event(), threading.Event()

def slow():
    started.set()
    assert release.wait(30)
    return 201, {"order": "first"}

def run(operation):
    return ORDER_KEYS.run(
        account=account, livemode=True, key="k-1", request_fingerprint="same",
        operation=operation,
    )

answers = {}
first = threading.Thread(target=lambda: answers.update(first=run(slow)))
first.start()
assert started.wait(30)
try:
    run(lambda: (201, {"order": "second"}))
    print("second ran")
except IdempotencyKeyInUse:
    print("second in use")
release.set()
first.join(30)
print("first", answers["first"].status, answers["first"].replayed)
after = run(lambda: (201, {"order": "third"}))
print("after", after.replayed, after.body["order"])
other = ORDER_KEYS.run(account=account, livemode=True, key="k-2", request_fingerprint="x",
                       operation=lambda: (201, {"order": "other key"}))
print("other", other.replayed)
"""


def test_a_request_whose_key_is_still_running_is_refused_at_once_then_replayed(tmp_path):
    done = on_the_embedded_default(SCRIPT, tmp_path / "db.sqlite3", env={}, timeout=120)
    lines = done.stdout.splitlines()
    assert "second in use" in lines, done.stdout
    assert "first 201 False" in lines and "after True first" in lines, done.stdout
    assert "other False" in lines, done.stdout
