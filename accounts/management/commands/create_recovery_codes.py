"""Replace a staff user's recovery codes: ten one-use codes, printed once, one a line."""

from django.core.management.base import BaseCommand, CommandError

from accounts.selectors import user_by_email
from accounts.services import recovery_codes_create


class Command(BaseCommand):
    help = "Replace a staff user's ten one-use recovery codes; prints them once."

    def add_arguments(self, parser):
        parser.add_argument("--email", required=True)

    def handle(self, *args, **options):
        user = user_by_email(email=options["email"])
        if user is None:
            raise CommandError(f"No user with email {options['email']}.")
        if not user.is_staff:
            raise CommandError("Only staff users have a second factor.")
        for code in recovery_codes_create(user=user):
            self.stdout.write(code)
