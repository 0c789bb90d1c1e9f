from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError
from django.core.validators import validate_email

from accounts.errors import EmailTaken
from accounts.services import user_create


class Command(BaseCommand):
    help = "Create a user with its own account (docs/contract.md §8)."

    def add_arguments(self, parser):
        parser.add_argument("--email", required=True)
        parser.add_argument("--password", required=True)
        parser.add_argument("--staff", action="store_true", help="May use the back office.")
        parser.add_argument("--b2b", action="store_true", help="Tag the account B2B.")
        parser.add_argument("--name", help="Account name (default: the email).")

    def handle(self, *args, **opts):
        try:
            validate_email(opts["email"].strip())
        except ValidationError as exc:
            raise CommandError(f"--email {opts['email']!r} is not an email address") from exc
        if not opts["password"]:
            raise CommandError("--password is empty: give the user a password")
        try:
            user = user_create(
                email=opts["email"],
                password=opts["password"],
                account_name=opts["name"],
                is_staff=opts["staff"],
                is_superuser=opts["staff"],
                is_b2b=opts["b2b"],
            )
        except EmailTaken as exc:
            raise CommandError(f"a user with email {opts['email']} already exists") from exc
        self.stdout.write(
            f"created {user.email} ({user.public_id}) in account "
            f"{user.account.name} ({user.account.public_id})"
        )
