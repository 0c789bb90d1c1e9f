from django.core.management.base import BaseCommand, CommandError

from accounts.selectors import user_by_email
from checkout.limits import caps_for, card_limits_of, card_limits_set
from checkout.models import CARD_LIMITS


def _value(text: str) -> int | None:
    if text.lower() in ("default", "none", "-"):
        return None
    try:
        return int(text)
    except ValueError as exc:
        raise CommandError(f"{text!r}: a whole number, or 'default'") from exc


class Command(BaseCommand):
    help = (
        "Set an account's own card purchase limits (docs/fraud.md): each option a whole number, "
        "or 'default' for the setting again; --reset puts every limit back to its setting. "
        "Prints the limits the account is then held to."
    )

    def add_arguments(self, parser):
        parser.add_argument("--email", required=True, help="A user of the account.")
        for name, setting in CARD_LIMITS:
            parser.add_argument(
                "--" + name.replace("_", "-"), dest=name, help=f"instead of {setting}"
            )
        parser.add_argument("--note", default="", help="Why (kept with the limits).")
        parser.add_argument("--reset", action="store_true", help="Every limit to its setting.")

    def handle(self, *args, **opts):
        user = user_by_email(email=opts["email"])
        if user is None:
            raise CommandError(f"no user with email {opts['email']}")
        account = user.account
        if opts["reset"]:
            values = {name: None for name, _setting in CARD_LIMITS}
        else:
            values = {
                name: _value(opts[name]) for name, _setting in CARD_LIMITS if opts[name] is not None
            }
        try:
            card_limits_set(account=account, values=values, note=opts["note"])
        except ValueError as exc:
            raise CommandError(str(exc)) from exc
        caps, row = caps_for(account), card_limits_of(account)
        self.stdout.write(f"card limits of {account.name} ({account.public_id}):")
        for name, setting in CARD_LIMITS:
            own = row is not None and getattr(row, name) is not None
            where = "the account's own" if own else setting
            self.stdout.write(f"  {name} = {getattr(caps, name)} ({where})")
