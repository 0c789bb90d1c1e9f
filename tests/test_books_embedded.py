"""The books and the ledger on the embedded default (``make run``: SQLite). SQLite sums
decimals as binary floats: a reversal of 5.14 and 4.8208 summed to 8.9e-16, not 0, and
``check_books`` reported a journal that balances."""

from tests.helpers import on_the_embedded_default

SCRIPT = """
import django
django.setup()
from django.core.management import call_command
call_command("migrate", verbosity=0)
from decimal import Decimal
from books.selectors import journals_unbalanced
from books.services import Sale, books_reversal_record, books_sales_record
from tests.factories import UserFactory
from wallet.selectors import ledger_mismatches
from wallet.services import wallet_topup_manual

user = UserFactory()
sale = Sale(
    reference="rch_embedded", customer_id=user.account.pk, price=Decimal("5.14"),
    currency="EUR", provider="reloadly", operator_id=None, country="MX",
    cost=Decimal("4.8208"), cost_currency="EUR", margin=Decimal("0.3192"),
)
books_sales_record(sales=[sale])
books_reversal_record(sale=sale)
print("unbalanced", journals_unbalanced())
for amount in ("0.10", "0.20", "0.70", "1234567.89", "0.01"):
    wallet_topup_manual(account=user.account, amount=Decimal(amount))
    print("mismatches", ledger_mismatches())  # after each: 0.1 + 0.2 is 0.30000000000000004
"""


def test_journals_and_wallets_that_balance_are_not_reported_on_sqlite(tmp_path):
    done = on_the_embedded_default(SCRIPT, tmp_path / "db.sqlite3", env={})
    assert "unbalanced []" in done.stdout, done.stdout
    said = [line for line in done.stdout.splitlines() if line.startswith("mismatches")]
    assert said == ["mismatches []"] * 5, done.stdout
