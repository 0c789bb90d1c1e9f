from decimal import Decimal, InvalidOperation

from django.core.management.base import BaseCommand, CommandError

from reseller.errors import ApplicationError
from upstreams.floats import provider_float_fund


class Command(BaseCommand):
    help = (
        "Book money prepaid to a provider (its float in the books; a negative amount books "
        "money it sent back). Prints the journal and the provider's float afterwards."
    )

    def add_arguments(self, parser):
        parser.add_argument("--provider", required=True)
        parser.add_argument("--amount", required=True)
        parser.add_argument("--currency", default="", help="default: the provider's")
        parser.add_argument("--memo", default="")

    def handle(self, *args, **opts):
        try:
            amount = Decimal(opts["amount"])
        except InvalidOperation as exc:
            raise CommandError(f"--amount {opts['amount']!r} is not a number") from exc
        if not amount.is_finite():
            raise CommandError("--amount must be a finite number")
        try:
            amount = amount.quantize(Decimal("0.0001"))
        except InvalidOperation as exc:  # 1e400: past any amount the books hold
            raise CommandError(f"--amount {opts['amount']!r} is too large") from exc
        try:
            journal, total = provider_float_fund(
                name=opts["provider"],
                amount=amount,
                currency=opts["currency"],
                memo=opts["memo"],
            )
        except ApplicationError as exc:
            raise CommandError(exc.detail) from exc
        self.stdout.write(f"{journal} float {total}")
