from django.core.management.base import BaseCommand, CommandError

from accounts.selectors import user_by_email
from reseller.errors import ValidationFailed
from webhooks.catalogue import EVENT_TYPES
from webhooks.services import endpoint_create
from webhooks.targets import private_allowed


class Command(BaseCommand):
    help = (
        "Create a webhook endpoint for the account of a user and print only its signing "
        "secret (whsec_…), which is shown this once (docs/webhooks.md)."
    )

    def add_arguments(self, parser):
        parser.add_argument("--email", required=True, help="A user of the account.")
        parser.add_argument("--url", required=True, help="Where events are POSTed (https).")
        parser.add_argument("--mode", required=True, choices=["live", "test"])
        parser.add_argument(
            "--events",
            action="extend",
            nargs="*",
            default=[],
            metavar="TYPE",
            choices=sorted(EVENT_TYPES),
            help="The event types it wants: --events A B, or --events A --events B "
            "(none = every type).",
        )
        parser.add_argument("--description", default="")

    def handle(self, *args, **opts):
        user = user_by_email(email=opts["email"])
        if user is None:
            raise CommandError(f"no user with email {opts['email']}")
        try:
            endpoint = endpoint_create(
                account=user.account,
                url=opts["url"],
                livemode=opts["mode"] == "live",
                events=opts["events"],
                description=opts["description"],
                user=user,
            )
        except ValidationFailed as exc:
            message = "; ".join(f["message"] for f in exc.fields or [])
            if not private_allowed() and ("private" in message or "https://" in message):
                # An operator's local receiver (http://127.0.0.1:…): say which switch opens it.
                message += (
                    " To send to a private or plain-http address (development, tests), set "
                    "WEBHOOK_ALLOW_PRIVATE_TARGETS=true in this command's environment and the "
                    "service's."
                )
            raise CommandError(message) from exc
        self.stdout.write(endpoint.secret)
