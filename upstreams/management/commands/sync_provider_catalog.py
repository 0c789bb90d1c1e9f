from django.core.management.base import BaseCommand, CommandError

from reseller.cli import work_printed_on_stderr
from reseller.errors import ApplicationError
from upstreams.adapters import ProviderError
from upstreams.services import catalog_sync, provider_balance_refresh, provider_get


class Command(BaseCommand):
    help = (
        "Read a provider's catalog: map its operators, create or update a route per product, "
        "deactivate the routes it no longer offers; then read its balance. Prints "
        "'operators mapped M, unmapped U; routes created C, updated P, removed R'."
    )

    def add_arguments(self, parser):
        parser.add_argument("--provider", required=True, help="the provider's name")
        parser.add_argument(
            "--country", action="append", default=None, help="ISO alpha-2; repeat for more"
        )

    def handle(self, *args, **opts):
        with work_printed_on_stderr():
            try:
                provider = provider_get(name=opts["provider"])
                result = catalog_sync(provider=provider, countries=opts["country"])
            except ApplicationError as exc:
                raise CommandError(exc.detail) from exc
            except ProviderError as exc:
                raise CommandError(f"{opts['provider']} did not answer: {exc}") from exc
            provider_balance_refresh(provider=provider)
        self.stdout.write(result.line())
        if note := result.skipped_note():
            self.stderr.write(note)
