"""Fair dispatch on the embedded default (``make run``: no broker, tasks on the web process's
thread pool, SQLite): contract section 15, "Batches never delay single orders of other
accounts". The pool is a queue like a broker's: a batch published whole put another account's
single order behind all of it (2.5 min behind a 10,000-line batch)."""

from tests.helpers import on_the_embedded_default

SCRIPT = """
import django
django.setup()
from django.core.management import call_command
call_command("migrate", verbosity=0)
from decimal import Decimal
from django.db import transaction
from orders.batches import batch_place
from orders.pricing import LineRequest
from orders.services import order_place_with_wallet
from recharges.models import Recharge
from tests.factories import ProductFactory, UserFactory
from tests.waiting import wait_until
from wallet.services import wallet_get_or_create, wallet_topup_manual

product = ProductFactory(retail_price=Decimal("1.00"))
a, b = UserFactory(), UserFactory()
for user in (a, b):
    wallet_topup_manual(account=user.account, amount=Decimal("1000.00"))
lines = [
    LineRequest(product=product, recipient_number=f"+5255{12340000 + i}", quantity=1)
    for i in range(200)
]
outcome = batch_place(
    account=a.account, lines=lines, references=[f"line-{i}" for i in range(200)],
    currency="EUR", user=a, idempotency_key="embedded-batch",
)
assert outcome.status == 202, outcome
with transaction.atomic():
    order_place_with_wallet(
        account=b.account, wallet=wallet_get_or_create(account=b.account), livemode=True,
        channel="b2b", currency="EUR", user=b,
        lines=[LineRequest(product=product, recipient_number="+525512345678", quantity=1)],
    )
b_rows = Recharge.objects.filter(account=b.account)
wait_until(lambda: b_rows.filter(status="delivered").exists(), timeout=120, what="b delivered")
a_rows = Recharge.objects.filter(account=a.account)
ahead = a_rows.filter(status="delivered").count()
wait_until(lambda: a_rows.filter(status="delivered").count() == 200, timeout=300,
           what="the whole batch delivered")
print("ahead", ahead)
print("delivered", Recharge.objects.filter(status="delivered").count())
"""


def test_a_batch_on_the_embedded_default_does_not_delay_another_accounts_order(tmp_path):
    done = on_the_embedded_default(
        SCRIPT,
        tmp_path / "db.sqlite3",
        env={
            "TASKS_IN_PROCESS_THREADED": "true",
            "AIRTIME_SIMULATOR_LATENCY_MS": "20",
            "DISPATCH_DIRECT_MAX": "5",
        },
        timeout=600,
    )
    said = dict(
        line.split() for line in done.stdout.splitlines() if line.startswith(("ahead", "delivered"))
    )
    # Behind one share of the batch (the default without a broker: the pool's 4 threads)
    # and what those threads held, not its 200 (nor the 100 of a worker's share).
    assert int(said["ahead"]) < 30, done.stdout
    assert int(said["delivered"]) == 201, done.stdout
