"""Bodies of the network's money endpoints (contract section 18): transfers and commissions.
Field names are snake_case here; the API's renderer and parser make them camelCase."""

from __future__ import annotations

from decimal import Decimal

from rest_framework import serializers

from network.models import Transfer
from reseller import openapi_examples as ex
from reseller.api import MoneyString, StrictSerializer
from reseller.money import MONEY

TRANSFER_MAX = Decimal("1000000.00")

# The schema's examples (the API's and the webhook's).
TRANSFER_EXAMPLE = {
    "object": "transfer",
    "id": "trf_5fQm2Xr8Lk1Vb7Nc3Zs9",
    "parent": ex.ACCOUNT_ID,
    "agent": "acc_T8kP1mZq4Wv7Xc2Nb5Lr",
    "amount": "50.00",
    "currency": ex.CURRENCY,
    "direction": "to_agent",
    "memo": "Float for November",
    "createdAt": ex.AT,
}
TRANSFER_REQUEST = {
    "agent": "acc_T8kP1mZq4Wv7Xc2Nb5Lr",
    "amount": "50.00",
    "currency": ex.CURRENCY,
    "direction": "to_agent",
    "memo": "Float for November",
}
COMMISSIONS_EXAMPLE = {
    "from": "2026-11-01",
    "to": "2026-11-24",
    "currency": ex.CURRENCY,
    "agents": [
        {
            "agent": "acc_T8kP1mZq4Wv7Xc2Nb5Lr",
            "recharges": 120,
            "sales": "630.00",
            "commission": "30.00",
        }
    ],
    "total": "30.00",
}


class TransferIn(StrictSerializer):
    agent = serializers.CharField(max_length=40, help_text="A direct agent's id (`acc_…`).")
    amount = MoneyString(
        **MONEY,
        min_value=Decimal("0.01"),
        max_value=TRANSFER_MAX,
        help_text='A decimal string, two places at most ("50.00").',
    )
    currency = serializers.RegexField(
        r"^[A-Z]{3}$", help_text="ISO 4217: both wallets' currency (else `currency_mismatch`)."
    )
    direction = serializers.ChoiceField(
        choices=Transfer.Direction.choices,
        help_text="`to_agent`: from your wallet to the agent's; `from_agent`: back to yours.",
    )
    memo = serializers.CharField(max_length=200, required=False, allow_blank=True, default="")


class TransferOut(serializers.Serializer):
    object = serializers.CharField(default="transfer")
    id = serializers.CharField(help_text="`trf_…`")
    # ``parent`` (the parent's account id) is named in ``get_fields``: a Field's attribute.
    agent = serializers.CharField(help_text="The direct agent's account id (`acc_…`).")
    amount = serializers.CharField(help_text="Decimal string, two places.")
    currency = serializers.CharField()
    direction = serializers.ChoiceField(choices=Transfer.Direction.choices)
    memo = serializers.CharField()
    created_at = serializers.CharField()

    def get_fields(self):
        fields = super().get_fields()
        parent = serializers.CharField(help_text="The parent's account id (`acc_…`).")
        return {"object": fields.pop("object"), "id": fields.pop("id"), "parent": parent, **fields}


class CommissionAgentOut(serializers.Serializer):
    agent = serializers.CharField(help_text="A direct agent (`acc_…`): its whole branch.")
    recharges = serializers.IntegerField(help_text="Recharges delivered in the branch.")
    sales = serializers.CharField(help_text="What the buying accounts paid for them.")
    commission = serializers.CharField(help_text="Your commission from them, net of reversals.")


class CommissionsOut(serializers.Serializer):
    # ``from`` is a keyword: the field is named in ``get_fields``.
    to = serializers.DateField()
    currency = serializers.CharField()
    agents = CommissionAgentOut(many=True)
    total = serializers.CharField(help_text="Your commission from every branch.")

    def get_fields(self):
        fields = super().get_fields()
        return {"from": serializers.DateField(), **fields}
