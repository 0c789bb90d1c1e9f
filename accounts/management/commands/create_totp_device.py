"""Enrol (or replace) a staff user's TOTP second factor; prints only its otpauth:// URI."""

from django.core.management.base import BaseCommand

from accounts.management.staff import staff_user
from accounts.services import totp_device_enrol


class Command(BaseCommand):
    help = "Enrol a staff user's authenticator (RFC 6238); prints only the otpauth:// URI."

    def add_arguments(self, parser):
        parser.add_argument("--email", required=True)

    def handle(self, *args, **options):
        user = staff_user(options["email"])
        self.stdout.write(totp_device_enrol(user=user).config_url)
