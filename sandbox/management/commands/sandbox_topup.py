from django.core.management.base import BaseCommand, CommandError

from accounts.selectors import api_key_by_prefix
from reseller.errors import ApplicationError
from sandbox.balances import sandbox_topup


class Command(BaseCommand):
    help = "Add 10, 50, 100 or 500 EUR to a test key's sandbox balance (the dashboard's rules)."

    def add_arguments(self, parser):
        parser.add_argument("--prefix", required=True, help="The key's visible prefix.")
        parser.add_argument("--amount", required=True)

    def handle(self, *args, **opts):
        key = api_key_by_prefix(prefix=opts["prefix"])
        if key is None:
            raise CommandError(f"no API key with prefix {opts['prefix']}")
        try:
            wallet = sandbox_topup(key=key, amount=opts["amount"])
        except ApplicationError as exc:
            message = exc.fields[0]["message"] if exc.fields else exc.detail
            raise CommandError(f"{exc.code}: {message}") from exc
        self.stdout.write(f"{wallet.balance} {wallet.currency}")
