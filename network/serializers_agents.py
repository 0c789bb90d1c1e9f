"""What the API takes and shows of agents (contract section 18)."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from accounts.models import Account
from network.agents import STATUSES, agent_status
from reseller.api import StrictSerializer

NAME_MAX = Account._meta.get_field("name").max_length


class AgentCreateIn(StrictSerializer):
    name = serializers.CharField(max_length=NAME_MAX)
    owner_email = serializers.EmailField(
        max_length=254, help_text="Gets an invitation to choose a password (as a team one)."
    )
    price_list = serializers.CharField(
        required=False,
        allow_null=True,
        max_length=40,
        help_text="`prl_…`: one of the caller's price lists; none: the caller's own price.",
    )


class AgentPatchIn(StrictSerializer):
    name = serializers.CharField(required=False, max_length=NAME_MAX)
    status = serializers.ChoiceField(
        choices=STATUSES,
        required=False,
        help_text="`suspended` refuses the agent's keys and sessions, and its own agents', "
        "at once (403 `account_suspended`); `active` restores them.",
    )
    price_list = serializers.CharField(
        required=False, allow_null=True, max_length=40, help_text="`prl_…`, or null: none."
    )


class AgentOut(serializers.Serializer):
    id = serializers.CharField(source="public_id")
    name = serializers.CharField()
    # The metaclass takes declared fields off the class: no clash with ``Field.parent``.
    parent = serializers.CharField(source="parent.public_id")  # type: ignore[assignment]
    level = serializers.IntegerField(source="depth", help_text="1 is a top account.")
    status = serializers.SerializerMethodField(help_text="`active` or `suspended`.")
    price_list = serializers.CharField(
        source="price_list_id", allow_null=True, help_text="One of the caller's lists, or null."
    )
    balance = serializers.DecimalField(max_digits=14, decimal_places=2)
    currency = serializers.CharField(source="wallet_currency")
    sales_30d = serializers.DecimalField(
        max_digits=14,
        decimal_places=2,
        help_text="What the agent's payments of the last 30 days came to, less refunds.",
    )
    created_at = serializers.DateTimeField()

    @extend_schema_field(serializers.ChoiceField(choices=STATUSES))
    def get_status(self, agent: Account) -> str:
        return agent_status(agent)
