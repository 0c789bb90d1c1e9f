import re
from datetime import date

from django.core.management.base import BaseCommand, CommandError

from reconciliation.services import reconciliation_run
from reseller.cli import work_printed_on_stderr
from reseller.errors import ApplicationError
from upstreams.adapters import ProviderError
from upstreams.services import provider_get


class Command(BaseCommand):
    help = (
        "Match a provider's transaction report of one UTC day with our recharges sent there, "
        "apply the reversals it shows and keep the result. Prints 'matched M, missing here H, "
        "missing there T, mismatched X'."
    )

    def add_arguments(self, parser):
        parser.add_argument("--provider", required=True, help="the provider's name")
        parser.add_argument("--date", required=True, help="the day, YYYY-MM-DD (UTC)")

    def handle(self, *args, **opts):
        try:
            if not re.fullmatch(r"\d{4}-\d{2}-\d{2}", opts["date"]):
                raise ValueError(opts["date"])
            day = date.fromisoformat(opts["date"])
        except ValueError as exc:
            raise CommandError(f"--date {opts['date']!r} is not a date (YYYY-MM-DD).") from exc
        try:
            provider = provider_get(name=opts["provider"])
            with work_printed_on_stderr():
                run = reconciliation_run(provider=provider, day=day)
        except ApplicationError as exc:
            raise CommandError(exc.detail) from exc
        except ProviderError as exc:
            raise CommandError(f"{opts['provider']} did not answer: {exc}") from exc
        self.stdout.write(run.line())
