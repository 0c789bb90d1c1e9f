"""The ledger and books checks as the metrics see them: run, and their result kept."""

from __future__ import annotations

from checkout.books_check import books_check
from reseller.metrics import ledger_check_recorded
from wallet.selectors import ledger_mismatches


def ledger_checks_run() -> bool:
    """Both checks (as ``check_ledger`` and ``check_books`` run them), each result kept for
    ``reseller_ledger_check_ok``; True when both found nothing wrong."""
    ledger_ok = not ledger_mismatches()
    ledger_check_recorded("ledger", ok=ledger_ok)
    books_ok = not books_check()
    ledger_check_recorded("books", ok=books_ok)
    return ledger_ok and books_ok
