"""Input and output shapes of price lists (contract section 18, "Price lists"): snake_case
here, camelCase on the wire; a rule names one of ``country`` (ISO code), ``operator`` or
``product`` (public ids) with its ``markupPercent``."""

from __future__ import annotations

from django.utils.translation import gettext_lazy as _
from rest_framework import serializers

from network.models import PriceListRule
from network.price_lists import MAX_RULES, RuleSpec
from reseller.api import PlainDecimalField, StrictSerializer

SCOPES = ("country", "operator", "product")


class RuleIn(StrictSerializer):
    country = serializers.CharField(
        required=False, max_length=2, help_text="ISO 3166-1 alpha-2, e.g. `MX`."
    )
    operator = serializers.CharField(required=False, max_length=40, help_text="`opr_…`")
    product = serializers.CharField(required=False, max_length=40, help_text="`prd_…`")
    markup_percent = PlainDecimalField(
        max_digits=7,
        decimal_places=2,
        help_text="Over the seller's own price. A parent's lists: 0 to 1000; the platform's "
        "(staff): over -100 (a discount under retail).",
    )

    def validate(self, attrs):
        if sum(1 for scope in SCOPES if attrs.get(scope)) != 1:
            raise serializers.ValidationError(
                _("A rule names exactly one of country, operator or product."),
                code="invalid_rule",
            )
        return attrs


class PriceListIn(StrictSerializer):
    name = serializers.CharField(max_length=100, help_text="Unique among your lists.")
    rules = RuleIn(many=True, required=False, help_text=f"At most {MAX_RULES}.")

    def specs(self) -> list[RuleSpec]:
        return [
            RuleSpec(
                markup_percent=rule["markup_percent"],
                country=rule.get("country"),
                operator=rule.get("operator"),
                product=rule.get("product"),
            )
            for rule in self.validated_data.get("rules", [])
        ]


class PriceListPut(PriceListIn):
    """A whole list sent back: what a GET gave, changed, may carry its own ``id`` (checked:
    another list's id is a mistake, not a move)."""

    id = serializers.CharField(
        required=False, max_length=40, help_text="Optional: this list's own id, `prl_…`."
    )

    def __init__(self, *args, price_list_id: str = "", **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.price_list_id = price_list_id

    def validate_id(self, value: str) -> str:
        if value != self.price_list_id:
            raise serializers.ValidationError(_("It is this list's id, or left out."))
        return value


class RuleOut(serializers.Serializer):
    """One rule: the scope it names (one of the three) and its markup."""

    country = serializers.CharField(required=False)
    operator = serializers.CharField(required=False)
    product = serializers.CharField(required=False)
    markup_percent = serializers.DecimalField(max_digits=7, decimal_places=2)

    def to_representation(self, instance: PriceListRule) -> dict:
        markup = serializers.DecimalField(max_digits=7, decimal_places=2)
        if instance.product is not None:
            scope = {"product": instance.product.public_id}
        elif instance.operator is not None:
            scope = {"operator": instance.operator.public_id}
        else:
            scope = {"country": str(instance.country_id)}
        return scope | {"markup_percent": markup.to_representation(instance.markup_percent)}


class PriceListOut(serializers.Serializer):
    id = serializers.CharField(source="public_id", help_text="Opaque id, `prl_…`.")
    name = serializers.CharField()
    rules = RuleOut(many=True, read_only=True)
