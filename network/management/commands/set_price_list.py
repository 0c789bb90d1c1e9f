from django.core.management.base import BaseCommand, CommandError

from accounts.selectors import user_by_email
from network.models import PriceList
from network.price_lists import price_list_assign
from reseller.errors import ApplicationError


class Command(BaseCommand):
    help = (
        "Price the top account of a user by one of the platform's price lists (contract "
        "section 18), or with --none by none again (its discountPercent applies). Agents "
        "are priced by their parent (PATCH /network/agents/{id})."
    )

    def add_arguments(self, parser):
        parser.add_argument("--email", required=True, help="A user of the top account.")
        choice = parser.add_mutually_exclusive_group(required=True)
        choice.add_argument("--price-list", help="NAME of a platform price list.")
        choice.add_argument("--none", action="store_true", help="Remove the account's list.")

    def handle(self, *args, **opts):
        user = user_by_email(email=opts["email"])
        if user is None:
            raise CommandError(f"no user with email {opts['email']}")
        account = user.account
        price_list = None
        if not opts["none"]:
            price_list = PriceList.objects.filter(
                owner__isnull=True, name=opts["price_list"]
            ).first()
            if price_list is None:
                raise CommandError(f"no platform price list named {opts['price_list']!r}")
        try:
            price_list_assign(account=account, price_list=price_list)
        except ApplicationError as exc:
            messages = "; ".join(f["message"] for f in exc.fields or []) or exc.detail
            raise CommandError(messages) from exc
        if price_list is None:
            self.stdout.write(
                f"account {account.name} ({account.public_id}) has no price list: "
                f"discount {account.discount_percent}%"
            )
        else:
            self.stdout.write(
                f"account {account.name} ({account.public_id}) is priced by "
                f"{price_list.name} ({price_list.public_id})"
            )
