from django.core.management.base import BaseCommand, CommandError

from accounts.selectors import user_by_email
from checkout.disputes import card_purchases_unfreeze


class Command(BaseCommand):
    help = (
        "Allow card purchases again on the account of a user, frozen by a dispute or an early "
        "fraud warning, once staff have reviewed it (docs/fraud.md)."
    )

    def add_arguments(self, parser):
        parser.add_argument("--email", required=True, help="A user of the account.")

    def handle(self, *args, **opts):
        user = user_by_email(email=opts["email"])
        if user is None:
            raise CommandError(f"no user with email {opts['email']}")
        account = user.account
        changed = card_purchases_unfreeze(account=account)
        state = "unfrozen" if changed else "not frozen; nothing changed"
        self.stdout.write(f"card purchases of {account.name} ({account.public_id}): {state}")
