"""Replace a staff user's recovery codes: ten one-use codes, printed once, one a line."""

from django.core.management.base import BaseCommand

from accounts.management.staff import staff_user
from accounts.services import recovery_codes_create


class Command(BaseCommand):
    help = "Replace a staff user's ten one-use recovery codes; prints them once."

    def add_arguments(self, parser):
        parser.add_argument("--email", required=True)

    def handle(self, *args, **options):
        user = staff_user(options["email"])
        for code in recovery_codes_create(user=user):
            self.stdout.write(code)
