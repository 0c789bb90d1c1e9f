from decimal import Decimal, InvalidOperation

from django.core.management.base import BaseCommand, CommandError

from accounts.selectors import user_by_email
from reseller.errors import ApplicationError
from wallet.services import wallet_set_threshold


class Command(BaseCommand):
    help = (
        "Set the live wallet's low-balance threshold of a user's account: a payment that "
        "takes the balance below it emits wallet.balance_low. Prints the threshold."
    )

    def add_arguments(self, parser):
        parser.add_argument("--email", required=True)
        parser.add_argument("--amount", required=True, help="e.g. 100.00; 'off' removes it.")

    def handle(self, *args, **opts):
        user = user_by_email(email=opts["email"])
        if user is None:
            raise CommandError(f"no user with email {opts['email']}")
        amount: Decimal | None = None
        if opts["amount"].lower() not in {"off", "none"}:
            try:
                amount = Decimal(opts["amount"])
            except InvalidOperation as exc:
                raise CommandError("--amount must be a number such as 100.00") from exc
            if not amount.is_finite():
                raise CommandError("--amount must be a number such as 100.00")
        try:
            wallet = wallet_set_threshold(account=user.account, amount=amount)
        except ApplicationError as exc:
            raise CommandError(exc.detail) from exc
        shown = "off" if wallet.low_balance_threshold is None else wallet.low_balance_threshold
        self.stdout.write(f"{shown} {wallet.currency}")
