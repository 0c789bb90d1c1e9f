from django.core.management.base import BaseCommand, CommandError

from reseller.errors import ApplicationError
from upstreams.models import Provider
from upstreams.services import provider_create


class Command(BaseCommand):
    help = (
        "Add an upstream provider account (docs/providers.md). Reloadly: --client-id, "
        "--client-secret, --auth-url; DT One: --api-key, --api-secret; Ding: --api-key. "
        "Secrets are stored and never shown again. Prints the name."
    )

    def add_arguments(self, parser):
        parser.add_argument("--name", required=True)
        parser.add_argument("--kind", required=True, choices=Provider.Kind.values)
        parser.add_argument("--base-url", default="", help="the provider's API server")
        parser.add_argument("--auth-url", default="", help="Reloadly's OAuth2 server")
        parser.add_argument("--client-id", default="")
        parser.add_argument("--client-secret", default="")
        parser.add_argument("--api-key", default="")
        parser.add_argument("--api-secret", default="")
        parser.add_argument("--priority", type=int, default=100, help="lower goes first")
        parser.add_argument("--currency", default="", help="the account's currency")
        parser.add_argument("--max-in-flight", type=int, default=50, help="0: no ceiling")

    def handle(self, *args, **opts):
        if opts["priority"] < 0 or opts["max_in_flight"] < 0:
            raise CommandError("--priority and --max-in-flight must be 0 or more")
        try:
            provider = provider_create(
                name=opts["name"],
                kind=opts["kind"],
                base_url=opts["base_url"],
                auth_url=opts["auth_url"],
                client_id=opts["client_id"],
                client_secret=opts["client_secret"],
                api_key=opts["api_key"],
                api_secret=opts["api_secret"],
                priority=opts["priority"],
                currency=opts["currency"],
                max_in_flight=opts["max_in_flight"],
            )
        except ApplicationError as exc:
            raise CommandError(exc.detail) from exc
        self.stdout.write(provider.name)
