from django.core.management.base import BaseCommand, CommandError

from accounts.selectors import user_by_email
from accounts.services import api_key_create
from reseller.errors import ValidationFailed


class Command(BaseCommand):
    help = (
        "Create an API key for the account of a user and print only its plaintext "
        "(docs/contract.md §8). The plaintext is not stored: keep it now."
    )

    def add_arguments(self, parser):
        parser.add_argument("--email", required=True, help="The user the key acts as.")
        parser.add_argument("--name", required=True, help="A name for the integration.")
        parser.add_argument("--mode", required=True, choices=["live", "test"])
        parser.add_argument(
            "--ip",
            action="extend",
            nargs="+",
            default=[],
            metavar="ADDR",
            help="Exact addresses allowed to use the key: --ip A B, or --ip A --ip B (none = any).",
        )

    def handle(self, *args, **opts):
        if any(not address.strip() for address in opts["ip"]):
            # Blank lines of the dashboard's list are skipped; here it would drop the
            # restriction the operator asked for: a key any address may use.
            raise CommandError("--ip is empty: give an exact IPv4 or IPv6 address")
        user = user_by_email(email=opts["email"])
        if user is None:
            raise CommandError(f"no user with email {opts['email']}")
        try:
            _key, plaintext = api_key_create(
                account=user.account,
                user=user,
                name=opts["name"],
                mode=opts["mode"],
                ip_whitelist=opts["ip"],
            )
        except ValidationFailed as exc:
            raise CommandError("; ".join(f["message"] for f in exc.fields or [])) from exc
        self.stdout.write(plaintext)
