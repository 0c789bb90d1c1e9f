from django.core.management.base import BaseCommand, CommandError

from reseller.errors import ApplicationError
from upstreams.pricing import price_rule_set


class Command(BaseCommand):
    help = (
        "Set the markup percent over the cheapest healthy route's cost of a country, an "
        "operator or a product (the most specific rule wins), and reprice its products at "
        "once. Prints the rule and what the repricing did."
    )

    def add_arguments(self, parser):
        scope = parser.add_mutually_exclusive_group(required=True)
        scope.add_argument("--country", help="CC, an ISO 3166-1 alpha-2 code, e.g. MX")
        scope.add_argument("--operator", help="OPERATOR_ID as the catalog API shows it")
        scope.add_argument("--product", help="PRODUCT_ID as the catalog API shows it")
        parser.add_argument("--markup-percent", required=True, help="0 to 1000, e.g. 12.5")

    def handle(self, *args, **opts):
        try:
            rule, repriced = price_rule_set(
                country=opts["country"],
                operator=opts["operator"],
                product=opts["product"],
                markup_percent=opts["markup_percent"],
            )
        except ApplicationError as exc:
            raise CommandError(exc.detail) from exc
        self.stdout.write(
            f"{rule.scope} {rule.target} markup {rule.markup_percent}%: {repriced.line()}"
        )
