from django.core.management.base import BaseCommand, CommandError

from checkout.books_check import books_check
from reseller.metrics import ledger_check_recorded


class Command(BaseCommand):
    help = (
        "Prove the books of the business: every journal balances, every delivered recharge "
        "has its price, cost and margin entries, every reversal its own, every lost dispute its "
        "amount and fee. Exit non-zero if not."
    )

    def handle(self, *args, **opts):
        problems = books_check()
        ledger_check_recorded("books", ok=not problems)  # reseller_ledger_check_ok
        for problem in problems:
            self.stderr.write(problem)
        if problems:
            raise CommandError(f"{len(problems)} problem(s) in the books")
        self.stdout.write("books ok")
