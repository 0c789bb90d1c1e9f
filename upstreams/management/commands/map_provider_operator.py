from django.core.management.base import BaseCommand, CommandError

from reseller.errors import ApplicationError
from upstreams.adapters import ProviderError
from upstreams.services import catalog_sync, provider_get, provider_operator_map


class Command(BaseCommand):
    help = (
        "Map a provider's operator (its id at the provider) to a catalog operator (its id as "
        "the catalog API shows it), then sync the provider's catalog so its routes exist. "
        "Prints the mapping."
    )

    def add_arguments(self, parser):
        parser.add_argument("--provider", required=True)
        parser.add_argument("--upstream-id", required=True)
        parser.add_argument("--operator", required=True, help="OPERATOR_ID, e.g. opr_…")

    def handle(self, *args, **opts):
        try:
            provider = provider_get(name=opts["provider"])
            upstream = provider_operator_map(
                provider=provider, upstream_id=opts["upstream_id"], operator_id=opts["operator"]
            )
        except ApplicationError as exc:
            raise CommandError(exc.detail) from exc
        assert upstream.operator is not None
        try:
            catalog_sync(provider=provider)
        except ProviderError as exc:
            self.stderr.write(f"mapped; the routes come with the next sync ({exc})")
        self.stdout.write(
            f"{provider.name} {upstream.upstream_id} ({upstream.name}) -> "
            f"{upstream.operator.public_id} ({upstream.operator.name})"
        )
