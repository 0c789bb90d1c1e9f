"""The events we POST to a reseller's webhook endpoints, as the OpenAPI schema's ``webhooks``
(SPECTACULAR_SETTINGS["WEBHOOKS"]; docs/webhooks.md). Here because orders is the lowest app
that knows every event's object: the recharge (as the lookup shows it), the balance, the batch.
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import (
    OpenApiExample,
    OpenApiResponse,
    OpenApiWebhook,
    extend_schema,
    inline_serializer,
)
from rest_framework import serializers

from network.serializers_money import TRANSFER_EXAMPLE, TransferOut
from orders.serializers import BatchOut
from recharges.serializers import RechargeDetailOut
from reseller import openapi_examples as ex
from wallet.serializers import BalanceOut
from webhooks import catalogue

SIGNATURE = (
    "Signed with `Reseller-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "
    '"<t>.<raw body>")>` (one `v1=` per valid secret). Answer 2xx within 10 s; anything else '
    "is retried with backoff for three days. Delivery is at least once, in no guaranteed "
    "order: de-duplicate by the event `id` (docs/webhooks.md)."
)
EVENT_ID = "evt_3kT0Q9bq7m2cQx1Wf8Zr"


def _envelope(name: str, event_type: str, data: dict[str, Any]) -> serializers.Serializer:
    return inline_serializer(
        name=name,
        fields={
            "id": serializers.CharField(help_text="`evt_…`: de-duplicate by it."),
            "type": serializers.ChoiceField(choices=[event_type]),
            "created_at": serializers.DateTimeField(),
            "livemode": serializers.BooleanField(),
            "data": inline_serializer(name=f"{name}Data", fields=data),
        },
    )


def _event(event_type: str, data: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": EVENT_ID,
        "type": event_type,
        "createdAt": ex.LATER,
        "livemode": True,
        "data": data,
    }


def _webhook(
    event_type: str,
    body: serializers.Serializer,
    examples: dict[str, dict[str, Any]],
) -> OpenApiWebhook:
    return OpenApiWebhook(
        name=event_type,
        decorator=extend_schema(
            summary=str(catalogue.EVENT_TYPES.get(event_type, "A test event from the dashboard.")),
            description=SIGNATURE,
            request=body,
            # Plain examples: drf-spectacular renders a webhook's body from the sender's side,
            # where a request_only example would be left out.
            examples=[
                OpenApiExample(name, value=_event(event_type, data), summary=name)
                for name, data in examples.items()
            ],
            responses={200: OpenApiResponse(description="Any 2xx: the event is delivered.")},
        ),
    )


def _recharge_event(event_type: str, name: str, recharge: dict[str, Any]) -> OpenApiWebhook:
    body = _envelope(name, event_type, {"object": RechargeDetailOut()})
    return _webhook(event_type, body, {event_type: {"object": recharge}})


_CREDIT = inline_serializer(
    name="WalletCredit",
    fields={
        "amount": serializers.CharField(),
        "currency": serializers.CharField(),
        "reference": serializers.CharField(help_text="The top-up's id (`top_…`)."),
    },
)

WEBHOOKS = [
    _recharge_event(catalogue.RECHARGE_DELIVERED, "RechargeDeliveredEvent", ex.recharge_detail()),
    _recharge_event(catalogue.RECHARGE_FAILED, "RechargeFailedEvent", ex.recharge_failed()),
    _recharge_event(
        catalogue.RECHARGE_WAITLISTED,
        "RechargeWaitlistedEvent",
        ex.recharge_detail(
            status="waitlisted",
            updatedAt=ex.AT,
            operatorReference=None,
            deliveredAmount=None,
            deliveredCurrency=None,
            events=[
                {"status": "queued", "previousStatus": None, "at": ex.AT, "note": "order placed"},
                {
                    "status": "waitlisted",
                    "previousStatus": "queued",
                    "at": ex.AT,
                    "note": "promotion starts 2026-11-25T06:00:00Z",
                },
            ],
        ),
    ),
    _recharge_event(
        catalogue.RECHARGE_REVERSED,
        "RechargeReversedEvent",
        ex.recharge_detail(
            status="reversed",
            failureCode="upstream_reversed",
            failureMessage="The provider took the top-up back.",
        ),
    ),
    _webhook(
        catalogue.WALLET_CREDITED,
        _envelope(
            "WalletCreditedEvent",
            catalogue.WALLET_CREDITED,
            {"object": BalanceOut(), "credit": _CREDIT},
        ),
        {
            catalogue.WALLET_CREDITED: {
                "object": ex.balance(),
                "credit": {"amount": "200.00", "currency": ex.CURRENCY, "reference": ex.TOPUP_ID},
            }
        },
    ),
    _webhook(
        catalogue.WALLET_BALANCE_LOW,
        _envelope(
            "WalletBalanceLowEvent",
            catalogue.WALLET_BALANCE_LOW,
            {"object": BalanceOut(), "threshold": serializers.CharField()},
        ),
        {
            catalogue.WALLET_BALANCE_LOW: {
                "object": ex.balance(available="95.00"),
                "threshold": "100.00",
            }
        },
    ),
    _webhook(
        catalogue.BATCH_COMPLETED,
        _envelope("BatchCompletedEvent", catalogue.BATCH_COMPLETED, {"object": BatchOut()}),
        {
            catalogue.BATCH_COMPLETED: {
                "object": ex.batch(
                    status="completed",
                    counts={"delivered": 2},
                    progress=1.0,
                    completedAt=ex.LATER,
                )
            }
        },
    ),
    _webhook(
        catalogue.NETWORK_TRANSFER_COMPLETED,
        _envelope(
            "NetworkTransferCompletedEvent",
            catalogue.NETWORK_TRANSFER_COMPLETED,
            {"object": TransferOut()},
        ),
        {catalogue.NETWORK_TRANSFER_COMPLETED: {"object": TRANSFER_EXAMPLE}},
    ),
    _webhook(
        catalogue.WEBHOOK_TEST,
        _envelope(
            "WebhookTestEvent",
            catalogue.WEBHOOK_TEST,
            {
                "object": inline_serializer(
                    name="WebhookTestObject",
                    fields={
                        "object": serializers.CharField(),
                        "id": serializers.CharField(),
                        "url": serializers.URLField(),
                        "message": serializers.CharField(),
                    },
                )
            },
        ),
        {
            catalogue.WEBHOOK_TEST: {
                "object": {
                    "object": "webhook_endpoint",
                    "id": "we_8Lr2Vb6Nc1Xz4Qa7Ws3E",
                    "url": "https://tienda-ana.example/hooks/reseller",
                    "message": "A test event sent from the dashboard.",
                }
            }
        },
    ),
]
