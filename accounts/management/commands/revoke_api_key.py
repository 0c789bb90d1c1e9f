from django.core.management.base import BaseCommand, CommandError

from accounts.selectors import api_key_by_prefix
from accounts.services import api_key_revoke


class Command(BaseCommand):
    help = "Revoke an API key for good, by its visible prefix (docs/contract.md §8)."

    def add_arguments(self, parser):
        parser.add_argument(
            "--prefix", required=True, help="The visible prefix, e.g. rsl_live_AbCd1234."
        )

    def handle(self, *args, **opts):
        key = api_key_by_prefix(prefix=opts["prefix"])
        if key is None:
            raise CommandError(f"no API key with prefix {opts['prefix']}")
        if key.revoked_at is not None:
            revoked = f"{key.revoked_at:%Y-%m-%dT%H:%M:%SZ}"
            self.stdout.write(f"{key.prefix} was already revoked at {revoked}")
            return
        key = api_key_revoke(key=key, by=None)
        self.stdout.write(f"revoked {key.prefix} ({key.name})")
