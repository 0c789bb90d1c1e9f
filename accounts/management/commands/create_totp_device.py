"""Enrol (or replace) a staff user's TOTP second factor; prints only its otpauth:// URI."""

from django.core.management.base import BaseCommand, CommandError

from accounts.selectors import user_by_email
from accounts.services import totp_device_enrol


class Command(BaseCommand):
    help = "Enrol a staff user's authenticator (RFC 6238); prints only the otpauth:// URI."

    def add_arguments(self, parser):
        parser.add_argument("--email", required=True)

    def handle(self, *args, **options):
        user = user_by_email(email=options["email"])
        if user is None:
            raise CommandError(f"No user with email {options['email']}.")
        if not user.is_staff:
            raise CommandError("Only staff users have a second factor.")
        self.stdout.write(totp_device_enrol(user=user).config_url)
