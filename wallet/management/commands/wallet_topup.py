from decimal import Decimal, InvalidOperation

from django.core.management.base import BaseCommand, CommandError

from accounts.models import User
from reseller.cli import work_printed_on_stderr
from reseller.errors import ApplicationError
from wallet.services import wallet_topup_manual


class Command(BaseCommand):
    help = "Credit a user's live wallet with an approved top-up and print the new balance."

    def add_arguments(self, parser):
        parser.add_argument("--email", required=True)
        parser.add_argument("--amount", required=True, help="e.g. 100.00")
        parser.add_argument("--note", default="")

    def handle(self, *args, **opts):
        try:
            user = User.objects.select_related("account").get(email__iexact=opts["email"])
        except User.DoesNotExist as exc:
            raise CommandError(f"no user with email {opts['email']}") from exc
        try:
            amount = Decimal(opts["amount"])
        except InvalidOperation as exc:
            raise CommandError("--amount must be a number such as 100.00") from exc
        try:
            with work_printed_on_stderr():
                topup = wallet_topup_manual(account=user.account, amount=amount, note=opts["note"])
        except ApplicationError as exc:
            raise CommandError(exc.detail) from exc
        topup.wallet.refresh_from_db()
        self.stdout.write(f"{topup.wallet.balance} {topup.wallet.currency}")
