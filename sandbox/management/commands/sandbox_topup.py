from django.core.management.base import BaseCommand, CommandError

from accounts.models import ApiKey
from reseller.errors import ApplicationError
from sandbox.balances import sandbox_topup


class Command(BaseCommand):
    help = "Add 10, 50, 100 or 500 EUR to a test key's sandbox balance (the dashboard's rules)."

    def add_arguments(self, parser):
        parser.add_argument("--prefix", required=True, help="The key's visible prefix.")
        parser.add_argument("--amount", required=True)

    def handle(self, *args, **opts):
        # As revoke_api_key: the prefix as /auth/me shows it, or as the dashboard does (with "…").
        key = ApiKey.objects.filter(prefix=opts["prefix"].strip().rstrip("…")).first()
        if key is None:
            raise CommandError(f"no API key with prefix {opts['prefix']}")
        try:
            wallet = sandbox_topup(key=key, amount=opts["amount"])
        except ApplicationError as exc:
            message = exc.fields[0]["message"] if exc.fields else exc.detail
            raise CommandError(f"{exc.code}: {message}") from exc
        self.stdout.write(f"{wallet.balance} {wallet.currency}")
