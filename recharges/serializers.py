"""What the API shows of a recharge: in lists, and looked up with its history."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from rest_framework import serializers

from recharges.models import Recharge
from recharges.pins import pin_body
from recharges.state import DELIVERED

FINAL_STATUSES_NOTE = (
    "Final statuses: `delivered`, `failed` and `reversed` (live; `delivered` becomes "
    "`reversed`, refunded, if the provider takes the top-up back), `success`, `rejected` and "
    "`timeout` (sandbox). `queued`, `waitlisted`, `dispatched` and `processing` move on by "
    "themselves."
)


PIN_NOTE = (
    "A PIN product's code once delivered (`delivered`, or `success` in the sandbox, where "
    "the PIN is simulated): shown only to the account that bought it; `null` for other "
    "products and before delivery. Its fields are `null` where the provider does not say."
)


class PinOut(serializers.Serializer):
    code = serializers.CharField(help_text="What the customer enters.")
    serial = serializers.CharField(allow_null=True)
    instructions = serializers.CharField(allow_null=True, help_text="How to use it.")
    valid_until = serializers.CharField(allow_null=True, help_text="As the provider says it.")


def recharge_pin(recharge: Recharge) -> dict[str, Any] | None:
    """The ``pin`` of a recharge body: its PIN once delivered, else None (docs/security.md)."""
    return pin_body(recharge) if recharge.status in DELIVERED else None


class RechargeOut(serializers.Serializer):
    id = serializers.CharField(source="public_id")
    product_id = serializers.CharField(source="product.public_id")
    recipient_number = serializers.CharField()
    local_amount = serializers.DecimalField(
        source="face_value",
        max_digits=12,
        decimal_places=2,
        help_text="What the recipient gets, in `localCurrency` (the amount chosen for a range "
        "product, the face value of a fixed one); `amount` is its price.",
    )
    local_currency = serializers.CharField(
        source="product.local_currency", help_text="The product's local currency."
    )
    amount = serializers.DecimalField(max_digits=12, decimal_places=2)
    currency = serializers.CharField()
    status = serializers.ChoiceField(choices=Recharge.Status.choices, help_text=FINAL_STATUSES_NOTE)
    failure_code = serializers.CharField(allow_null=True)
    failure_message = serializers.CharField(allow_null=True)
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()
    livemode = serializers.BooleanField()

    def get_fields(self):
        # ``fields`` is the serializer's own field map: the line's extra fields are added
        # here under that name (contract section 17).
        found = super().get_fields()
        found["fields"] = serializers.DictField(
            child=serializers.CharField(),
            read_only=True,
            help_text="The extra fields its line carried (`senderPhone`, `recipientEmail`, …): "
            "`{}` when its product needs none.",
        )
        found["pin"] = PinOut(read_only=True, allow_null=True, help_text=PIN_NOTE)
        return found

    def to_representation(self, instance):
        data = super().to_representation(instance)
        data["failure_code"] = data["failure_code"] or None
        data["failure_message"] = data["failure_message"] or None
        # The buyer's own (contract section 17); an ancestor reading its agent's sales
        # (``context["buyer"]`` False) sees neither the PIN nor the fields.
        buyer = self.context.get("buyer", True)
        data["fields"] = dict(instance.fields or {}) if buyer else {}
        data["pin"] = recharge_pin(instance) if buyer else None
        return data


class RechargeEventOut(serializers.Serializer):
    status = serializers.ChoiceField(choices=Recharge.Status.choices, source="to_status")
    previous_status = serializers.CharField(source="from_status", allow_null=True)
    at = serializers.DateTimeField(source="created_at")
    note = serializers.CharField()

    def to_representation(self, instance):
        data = super().to_representation(instance)
        data["previous_status"] = data["previous_status"] or None
        return data


class RechargeDetailOut(RechargeOut):
    """A recharge looked up after the 201: where it belongs, what the recipient got, its history.

    The lookup renders it, and so do the webhook events of recharges (``recharges.events``):
    one serializer, whatever path writes the event. The fields document the shape (OpenAPI);
    ``recharge_detail`` renders it as a plain dict (a processor's batch renders many).
    """

    order_id = serializers.CharField(source="order.public_id")
    payment_id = serializers.CharField(source="payment.public_id")
    operator_reference = serializers.CharField(
        allow_null=True, help_text="The provider's id of the top-up, once delivered."
    )
    delivered_amount = serializers.DecimalField(
        max_digits=12,
        decimal_places=2,
        allow_null=True,
        help_text="What the recipient received (in deliveredCurrency), once delivered.",
    )
    delivered_currency = serializers.CharField(allow_null=True)
    events = RechargeEventOut(many=True, help_text="The status history, oldest first.")

    def to_representation(self, instance):
        return recharge_detail(
            instance,
            order_id=instance.order.public_id,
            payment_id=instance.payment.public_id,
            events=instance.events.all(),
        )


_MONEY = serializers.DecimalField(max_digits=12, decimal_places=2)
_TIME = serializers.DateTimeField()


def recharge_detail(
    recharge: Recharge,
    *,
    order_id: str,
    payment_id: str,
    events: Iterable[Any],
    buyer: bool = True,
) -> dict[str, Any]:
    """The fields of ``RechargeDetailOut`` (snake_case), rendered as a plain dict (the
    processor renders one for every recharge it finishes with an endpoint, so it costs a
    dict, not a serializer tree). ``events``: history rows, oldest first. ``buyer`` False:
    read by another account (an ancestor in a network), without the PIN and the extra fields,
    which are the buyer's only (contract section 17)."""
    delivered = recharge.status in DELIVERED
    product = recharge.product
    return {
        "id": recharge.public_id,
        "product_id": product.public_id,
        "recipient_number": recharge.recipient_number,
        "local_amount": _MONEY.to_representation(recharge.face_value),
        "local_currency": product.local_currency,
        "amount": _MONEY.to_representation(recharge.amount),
        "currency": recharge.currency,
        "status": recharge.status,
        "failure_code": recharge.failure_code or None,
        "failure_message": recharge.failure_message or None,
        "created_at": _TIME.to_representation(recharge.created_at),
        "updated_at": _TIME.to_representation(recharge.updated_at),
        "livemode": recharge.livemode,
        "fields": dict(recharge.fields or {}) if buyer else {},
        "pin": recharge_pin(recharge) if buyer else None,
        "order_id": order_id,
        "payment_id": payment_id,
        "operator_reference": (recharge.provider_transaction_id or None) if delivered else None,
        "delivered_amount": (
            _MONEY.to_representation(recharge.amount_delivered) if delivered else None
        ),
        "delivered_currency": product.local_currency if delivered else None,
        "events": [
            {
                "status": event.to_status,
                "previous_status": event.from_status or None,
                "at": _TIME.to_representation(event.created_at),
                "note": event.note,
            }
            for event in events
        ],
    }
