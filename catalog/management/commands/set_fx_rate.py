from decimal import Decimal, InvalidOperation

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from catalog.services import fx_rate_set


class Command(BaseCommand):
    help = "Set an exchange rate of the FX table: 1 FROM = RATE TO. Prints the pair and rate."

    def add_arguments(self, parser):
        parser.add_argument("--from", dest="base", required=True, help="e.g. EUR")
        parser.add_argument("--to", dest="quote", required=True, help="e.g. USD")
        parser.add_argument("--rate", required=True, help="e.g. 1.08")

    def handle(self, *args, **opts):
        try:
            rate = Decimal(opts["rate"])
        except InvalidOperation as exc:
            raise CommandError("--rate must be a number such as 1.08") from exc
        if not rate.is_finite() or rate <= 0:
            raise CommandError("--rate must be a positive number such as 1.08")
        try:
            fx, _outcome = fx_rate_set(
                base_currency=opts["base"], quote_currency=opts["quote"], rate=rate
            )
        except ValidationError as exc:
            raise CommandError("; ".join(exc.messages)) from exc
        self.stdout.write(f"{fx.base_currency}/{fx.quote_currency} {fx.rate}")
