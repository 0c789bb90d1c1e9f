from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError
from django.core.validators import URLValidator

from reseller.errors import ApplicationError
from upstreams.services import provider_set

TRUTH = {"true": True, "yes": True, "1": True, "false": False, "no": False, "0": False}


class Command(BaseCommand):
    help = (
        "Enable or disable an upstream provider, change its priority or where its API is. "
        "Prints its state."
    )

    def add_arguments(self, parser):
        parser.add_argument("--name", required=True)
        parser.add_argument("--enabled", choices=sorted(TRUTH), default=None)
        parser.add_argument("--priority", type=int, default=None, help="lower goes first")
        parser.add_argument("--max-in-flight", type=int, default=None, help="0: no ceiling")
        parser.add_argument(
            "--callback-secret",
            default=None,
            help="sent in the callback URL as HTTP Basic credentials; callbacks without it "
            "are refused (providers that call back: DT One)",
        )
        parser.add_argument("--base-url", default=None, help="where its API is")
        parser.add_argument("--auth-url", default=None, help="its OAuth server (Reloadly)")

    def handle(self, *args, **opts):
        for option in ("priority", "max_in_flight"):
            if opts[option] is not None and opts[option] < 0:
                raise CommandError(f"--{option.replace('_', '-')} must be 0 or more")
        for option in ("base_url", "auth_url"):
            if opts[option] is not None:
                try:
                    URLValidator(schemes=["http", "https"])(opts[option])
                except ValidationError as exc:
                    name = option.replace("_", "-")
                    raise CommandError(f"--{name}: not an http(s) URL: {opts[option]!r}") from exc
        enabled = None if opts["enabled"] is None else TRUTH[opts["enabled"]]
        try:
            provider = provider_set(
                name=opts["name"],
                enabled=enabled,
                priority=opts["priority"],
                max_in_flight=opts["max_in_flight"],
                secrets={"callback_secret": opts["callback_secret"] or ""},
                base_url=opts["base_url"],
                auth_url=opts["auth_url"],
            )
        except ApplicationError as exc:
            raise CommandError(exc.detail) from exc
        state = "enabled" if provider.enabled else "disabled"
        self.stdout.write(f"{provider.name} {state} priority {provider.priority}")
