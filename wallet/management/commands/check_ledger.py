from django.core.management.base import BaseCommand, CommandError

from reseller.metrics import ledger_check_recorded
from wallet.selectors import ledger_mismatches


class Command(BaseCommand):
    help = "Exit non-zero if any wallet's cached balance differs from the sum of its entries."

    def handle(self, *args, **opts):
        mismatches = ledger_mismatches()
        ledger_check_recorded("ledger", ok=not mismatches)  # reseller_ledger_check_ok
        for wallet, total in mismatches:
            self.stderr.write(
                f"{wallet.public_id} ({wallet.account}): cached {wallet.balance}, entries {total}"
            )
        if mismatches:
            raise CommandError(f"{len(mismatches)} wallet(s) out of balance")
        self.stdout.write("ledger ok")
