from django.core.management.base import BaseCommand, CommandError

from accounts.selectors import user_by_email
from accounts.services import account_set_b2b


class Command(BaseCommand):
    help = "Tag the account of a user B2B, or untag it with --off (docs/contract.md §8)."

    def add_arguments(self, parser):
        parser.add_argument("--email", required=True)
        parser.add_argument("--off", action="store_true", help="Remove the B2B tag.")

    def handle(self, *args, **opts):
        user = user_by_email(email=opts["email"])
        if user is None:
            raise CommandError(f"no user with email {opts['email']}")
        account = account_set_b2b(account=user.account, is_b2b=not opts["off"])
        state = "B2B" if account.is_b2b else "not B2B"
        self.stdout.write(f"account {account.name} ({account.public_id}) is {state}")
