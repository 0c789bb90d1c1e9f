"""Request and response shapes of carts, quotes, payments, recharges and orders."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _
from djangorestframework_camel_case.util import camelize_re, underscore_to_camel
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers
from rest_framework.exceptions import ErrorDetail

from catalog.errors import FxRateNotFound, PhoneNumberError
from catalog.fields import fields_check
from catalog.phone import recipient_validate
from catalog.selectors import fx_rate, products_get
from orders.models import DEFAULT_SESSION
from orders.pricing import QUANTITY_MAX, QUANTITY_MIN, LineRequest, amount_refused
from recharges.models import Recharge
from recharges.serializers import RechargeOut, recharge_pin
from reseller.api import JsonIntegerField, PlainDecimalField, StrictSerializer
from reseller.money import quantize

if TYPE_CHECKING:
    from orders.services import PlacedOrder

MAX_LINES = 50
# ``whenPromotionScheduled`` (contract §5): hold recharges of a product whose promotion is
# scheduled to start soon until it starts (the default), or send them now without it.
WAIT, SEND_NOW = "wait", "sendNow"


def promotion_choice_field() -> serializers.ChoiceField:
    return serializers.ChoiceField(
        choices=[WAIT, SEND_NOW],
        default=WAIT,
        help_text="For a product whose promotion is scheduled to start within "
        "`WAITLIST_HORIZON`: `wait` (default) holds its recharges as `waitlisted` until the "
        "promotion starts, so the recipient gets it; `sendNow` sends them at once, at today's "
        "terms. Products without a scheduled promotion are sent at once either way.",
    )


CURRENCY_FIELD: dict[str, Any] = {
    "regex": r"^[A-Z]{3}$",
    "max_length": 3,
    "error_messages": {"invalid": _("Use an ISO 4217 code such as EUR.")},
}


def local_amount_field() -> PlainDecimalField:
    """A line's ``localAmount``: any decimal number of up to 20 digits here, its places
    unbounded, so that an amount the product does not take (``12.345``) is one error,
    ``invalid_amount`` naming the amounts it takes (``check_lines``), not a precision error.
    Twenty digits keep the range and step arithmetic exact (28-digit decimal context)."""
    return PlainDecimalField(
        max_digits=20,
        decimal_places=None,
        required=False,
        allow_null=True,
        help_text="What the recipient gets, in the product's local currency (contract section "
        "17): required for a range product, within its `range` and on a step; for a fixed "
        "product leave it out or send its `localAmount`. Anything else is 400 "
        "`invalid_amount` naming the range.",
    )


def line_fields_field() -> serializers.JSONField:
    """A line's ``fields``: the extra fields its product needs (contract section 17)."""
    return serializers.JSONField(
        required=False,
        allow_null=True,
        help_text="What the product needs besides the number (its `requiredFields`): "
        '`{"senderName", "senderPhone", "recipientEmail", "recipientName"}`. One missing or '
        "malformed is 400 `validation_error` naming it (`missing_field`, `invalid_field`).",
    )


class WithLineFields:
    """Adds a line's ``fields`` (a serializer's own ``fields`` attribute is taken: its field
    map)."""

    def get_fields(self):
        found = super().get_fields()
        found["fields"] = line_fields_field()
        return found


class OrderLineIn(WithLineFields, StrictSerializer):
    product_id = serializers.CharField(max_length=64)
    recipient_number = serializers.CharField(max_length=32)
    quantity = JsonIntegerField(min_value=QUANTITY_MIN, max_value=QUANTITY_MAX)
    local_amount = local_amount_field()


def _fields_given(value: Any) -> Any:
    """A line's ``fields`` with their wire names: the camelCase parser turned
    ``senderPhone`` into ``sender_phone``, as it does every key of a request."""
    if not isinstance(value, dict):
        return value
    return {camelize_re.sub(underscore_to_camel, str(key)): item for key, item in value.items()}


def check_lines(items: list[dict]) -> tuple[list[LineRequest], list[dict]]:
    """Look the products up in one go and check every number against its product's country
    and every local amount against its product's (``Product.accepts``, contract section 17):
    the lines, and each item's errors (``{}`` for a good one). A refused amount is the field
    error ``invalid_amount`` at ``localAmount``; a request whose only errors are those is
    answered 400 ``invalid_amount`` (``reseller.errors``)."""
    products = products_get(product_ids=[item["product_id"] for item in items])
    errors: list[dict] = [{} for _item in items]
    lines: list[LineRequest] = []
    for index, item in enumerate(items):
        product = products.get(item["product_id"])
        if product is None:
            errors[index]["product_id"] = [
                ErrorDetail(gettext("No such recharge product."), code="unknown_product")
            ]
            continue
        try:
            phone = recipient_validate(number=item["recipient_number"], product=product)
        except PhoneNumberError as exc:
            errors[index]["recipient_number"] = [ErrorDetail(exc.message, code=exc.field_code)]
            continue
        amount = item.get("local_amount")
        if not product.accepts(amount):
            errors[index]["local_amount"] = [
                ErrorDetail(amount_refused(product), code="invalid_amount")
            ]
            continue
        fields, refused = fields_check(
            required=product.required_fields or [], given=_fields_given(item.get("fields"))
        )
        if refused:
            errors[index]["fields"] = {
                error.field: [ErrorDetail(error.message, code=error.code)] for error in refused
            }
            if "fields" in errors[index]["fields"]:  # not an object at all
                errors[index]["fields"] = errors[index]["fields"]["fields"]
            continue
        lines.append(
            LineRequest(
                product=product,
                recipient_number=phone.e164,
                quantity=item["quantity"],
                local_amount=product.amount_of(None if amount is None else quantize(amount)),
                fields=fields,
            )
        )
    return lines, errors


def validate_lines(items: list[dict], *, nested: bool = True) -> list[LineRequest]:
    """``check_lines``, raising when any line is bad.

    Errors name ``items[i].field`` (``nested``) or the bare field for a single cart item.
    """
    lines, errors = check_lines(items)
    if any(errors):
        raise serializers.ValidationError({"items": errors} if nested else errors[0])
    return lines


def validate_currency(value: str) -> str:
    try:
        fx_rate(from_currency="EUR", to_currency=value)
    except FxRateNotFound as exc:
        raise serializers.ValidationError(
            _("We do not price in this currency."), code="unsupported_currency"
        ) from exc
    return value


def validate_units(items: list[dict], *, max_units: int | None) -> None:
    """Σ quantity of one request against the caller's limit (live or test key, settings)."""
    units = sum(item["quantity"] for item in items)
    if max_units is not None and units > max_units:
        raise serializers.ValidationError(
            {
                "items": [
                    ErrorDetail(
                        gettext(
                            "At most %(max)d recharge units per request; this one has %(units)d."
                        )
                        % {"max": max_units, "units": units},
                        code="too_many_units",
                    )
                ]
            }
        )


class OrderIn(StrictSerializer):
    """The order request envelope: lines and the base currency."""

    items = OrderLineIn(many=True, allow_empty=False, max_length=MAX_LINES)  # type: ignore[call-arg]
    base_currency = serializers.RegexField(**CURRENCY_FIELD)
    when_promotion_scheduled = promotion_choice_field()

    def validate_base_currency(self, value: str) -> str:
        return validate_currency(value)

    def validate(self, data):
        validate_units(data["items"], max_units=self.context.get("max_units"))
        data["lines"] = validate_lines(data["items"])
        return data


BATCH_MAX_LINES = 10_000  # docs/contract.md §13


class BatchLineIn(OrderLineIn):
    reference = serializers.CharField(max_length=100, required=False, allow_blank=True)


class BatchIn(StrictSerializer):
    """A batch: the order envelope with up to 10,000 lines, each with an optional reference.
    The per-request unit limit of single orders does not apply; the wallet check does."""

    items = BatchLineIn(many=True, allow_empty=False, max_length=BATCH_MAX_LINES)  # type: ignore[call-arg]
    base_currency = serializers.RegexField(**CURRENCY_FIELD)
    when_promotion_scheduled = promotion_choice_field()

    def validate_base_currency(self, value: str) -> str:
        return validate_currency(value)

    def validate(self, data):
        data["lines"] = validate_lines(data["items"])
        data["references"] = [item.get("reference", "") for item in data["items"]]
        return data

    def to_internal_value(self, data):
        """Every bad line named at once: when some lines fail their fields, the others are
        still checked for their product and number (DRF would stop before ``validate``)."""
        try:
            return super().to_internal_value(data)
        except serializers.ValidationError as exc:
            detail = exc.detail if isinstance(exc.detail, dict) else {}
            failed, raw = detail.get("items"), data.get("items") if isinstance(data, dict) else None
            if isinstance(failed, dict) and isinstance(raw, list):
                checked = [(i, BatchLineIn(data=item)) for i, item in enumerate(raw)]
                good = [
                    (i, s.validated_data) for i, s in checked if i not in failed and s.is_valid()
                ]
                _lines, errors = check_lines([item for _i, item in good])
                failed.update(
                    {i: error for (i, _item), error in zip(good, errors, strict=True) if error}
                )
            raise


class BatchOut(serializers.Serializer):
    """The batch object (docs/contract.md §13), for the schema; views send ``batch_object``."""

    id = serializers.CharField()
    object = serializers.CharField()
    status = serializers.ChoiceField(choices=["running", "completed"])
    order_id = serializers.CharField()
    total = serializers.CharField()
    currency = serializers.CharField()
    livemode = serializers.BooleanField()
    counts = serializers.DictField(child=serializers.IntegerField())
    recharges = serializers.IntegerField()
    progress = serializers.FloatField()
    created_at = serializers.DateTimeField()
    completed_at = serializers.DateTimeField(allow_null=True)


class QuoteIn(StrictSerializer):
    """Either a cart (``sessionId``) or explicit ``items``; ``baseCurrency`` defaults to EUR."""

    session_id = serializers.CharField(max_length=100, required=False)
    items = OrderLineIn(many=True, allow_empty=False, max_length=MAX_LINES, required=False)  # type: ignore[call-arg]
    base_currency = serializers.RegexField(**CURRENCY_FIELD, required=False)

    def validate_base_currency(self, value: str) -> str:
        return validate_currency(value)

    def validate(self, data):
        if ("items" in data) == ("session_id" in data):
            raise serializers.ValidationError(
                {
                    "session_id": [
                        ErrorDetail(
                            gettext("Send either sessionId or items, not both."), code="invalid"
                        )
                    ]
                }
            )
        if "items" in data:
            # What may be quoted may be ordered: the order's units cap (the key's), as its
            # lines cap (a cart is capped when it is checked out).
            validate_units(data["items"], max_units=self.context.get("max_units"))
            data["lines"] = validate_lines(data["items"])
        return data


class CartItemIn(WithLineFields, StrictSerializer):
    session_id = serializers.CharField(max_length=100, required=False, default=DEFAULT_SESSION)
    product_id = serializers.CharField(max_length=64)
    recipient_number = serializers.CharField(max_length=32)
    quantity = JsonIntegerField(min_value=QUANTITY_MIN, max_value=QUANTITY_MAX)
    local_amount = local_amount_field()

    def validate(self, data):
        (line,) = validate_lines([data], nested=False)
        data["line"] = line
        return data


class CartQuery(serializers.Serializer):
    session_id = serializers.CharField(max_length=100)


# -- responses ------------------------------------------------------------------------------


_MONEY = serializers.DecimalField(max_digits=12, decimal_places=2)
_TIME = serializers.DateTimeField()


def local_amount_out(**kwargs: Any) -> serializers.DecimalField:
    return serializers.DecimalField(
        max_digits=12,
        decimal_places=2,
        allow_null=True,
        help_text="What the recipient gets, in `localCurrency` (the amount chosen for a range "
        "product, the face value of a fixed one).",
        **kwargs,
    )


def local_currency_out() -> serializers.CharField:
    return serializers.CharField(
        source="product.local_currency", help_text="The product's local currency."
    )


def _local(amount) -> str | None:
    return None if amount is None else _MONEY.to_representation(amount)


class DisputeOut(serializers.Serializer):
    status = serializers.CharField()
    amount = serializers.CharField(allow_null=True)
    reason = serializers.CharField()


def dispute_body(payment) -> dict[str, Any] | None:
    if not payment.dispute_status:
        return None
    amount = payment.dispute_amount
    return {
        "status": payment.dispute_status,
        "amount": None if amount is None else _MONEY.to_representation(amount),
        "reason": payment.dispute_reason,
    }


class PaymentOut(serializers.Serializer):
    id = serializers.CharField(source="public_id")
    order_id = serializers.CharField(source="order.public_id")
    status = serializers.CharField()
    method = serializers.CharField()
    amount = serializers.DecimalField(max_digits=12, decimal_places=2)
    refunded_amount = serializers.DecimalField(max_digits=12, decimal_places=2)
    currency = serializers.CharField()
    livemode = serializers.BooleanField()
    created_at = serializers.DateTimeField()
    recharges = RechargeOut(many=True)
    dispute = serializers.SerializerMethodField(
        help_text="A dispute or early fraud warning on the card charge (docs/fraud.md), or "
        "null: `status` is `warning` for an early fraud warning (its `amount` null, its "
        "`reason` the fraud type) or Stripe's dispute status (`needs_response`, `won`, `lost` "
        "…), `amount` the amount disputed and `reason` Stripe's reason."
    )

    @extend_schema_field(DisputeOut(allow_null=True))
    def get_dispute(self, payment) -> dict[str, Any] | None:
        return dispute_body(payment)


class OrderLineOut(serializers.Serializer):
    product_id = serializers.CharField(source="product.public_id")
    recipient_number = serializers.CharField()
    quantity = serializers.IntegerField()
    local_amount = local_amount_out(source="face_value")
    local_currency = local_currency_out()
    unit_price = serializers.DecimalField(max_digits=12, decimal_places=2)
    line_total = serializers.DecimalField(max_digits=12, decimal_places=2)


class OrderOut(serializers.Serializer):
    id = serializers.CharField(source="public_id")
    payment = PaymentOut()
    lines = OrderLineOut(many=True)
    recharges = RechargeOut(many=True)
    total = serializers.DecimalField(max_digits=12, decimal_places=2)
    currency = serializers.CharField()
    livemode = serializers.BooleanField()
    when_promotion_scheduled = serializers.SerializerMethodField(
        help_text="What was asked for recharges of a product whose promotion starts soon."
    )
    created_at = serializers.DateTimeField()

    def get_when_promotion_scheduled(self, order) -> str:
        return WAIT if order.promotion_wait else SEND_NOW


def order_body(placed: PlacedOrder) -> dict[str, Any]:
    """``OrderOut(order).data`` as plain dicts, without a serializer tree and from the rows
    the order was placed with (``orders.services.PlacedOrder``), not read back: the B2B
    request renders it for every order it places (DRF's field-by-field rendering was a tenth
    of that request's time, docs/performance.md). A test holds the two equal for orders of
    every shape; ``OrderOut`` stays the documented schema. An order's recharges are its
    payment's (one payment per order), so both lists are rendered from the same objects."""
    order, payment = placed.order, placed.payment
    recharges = [_recharge_body(recharge) for recharge in placed.recharges]
    return {
        "id": order.public_id,
        "payment": {
            "id": payment.public_id,
            "order_id": order.public_id,
            "status": str(payment.status),
            "method": str(payment.method),
            "amount": _MONEY.to_representation(payment.amount),
            "refunded_amount": _MONEY.to_representation(payment.refunded_amount),
            "currency": payment.currency,
            "livemode": payment.livemode,
            "created_at": _TIME.to_representation(payment.created_at),
            "recharges": recharges,
            "dispute": dispute_body(payment),
        },
        "lines": [
            {
                "product_id": line.product.public_id,
                "recipient_number": line.recipient_number,
                "quantity": line.quantity,
                "local_amount": _local(line.face_value),
                "local_currency": line.product.local_currency,
                "unit_price": _MONEY.to_representation(line.unit_price),
                "line_total": _MONEY.to_representation(line.line_total),
            }
            for line in placed.lines
        ],
        "recharges": recharges,
        "total": _MONEY.to_representation(order.total),
        "currency": order.currency,
        "livemode": order.livemode,
        "when_promotion_scheduled": WAIT if order.promotion_wait else SEND_NOW,
        "created_at": _TIME.to_representation(order.created_at),
    }


def _recharge_body(recharge: Recharge) -> dict[str, Any]:
    """``RechargeOut(recharge).data`` as a plain dict."""
    return {
        "id": recharge.public_id,
        "product_id": recharge.product.public_id,
        "recipient_number": recharge.recipient_number,
        "local_amount": _local(recharge.face_value),
        "local_currency": recharge.product.local_currency,
        "amount": _MONEY.to_representation(recharge.amount),
        "currency": recharge.currency,
        "status": str(recharge.status),
        "failure_code": recharge.failure_code or None,
        "failure_message": recharge.failure_message or None,
        "created_at": _TIME.to_representation(recharge.created_at),
        "updated_at": _TIME.to_representation(recharge.updated_at),
        "livemode": recharge.livemode,
        "fields": dict(recharge.fields or {}),
        "pin": recharge_pin(recharge),
    }


class PromotionBrief(serializers.Serializer):
    id = serializers.CharField(source="public_id")
    name = serializers.CharField(source="name_localized")
    status = serializers.SerializerMethodField()
    starts_at = serializers.DateTimeField()
    ends_at = serializers.DateTimeField()

    def get_status(self, promotion) -> str:
        return str(promotion.status)


class QuoteLineOut(serializers.Serializer):
    product_id = serializers.CharField(source="product.public_id")
    recipient_number = serializers.CharField()
    quantity = serializers.IntegerField()
    local_amount = local_amount_out()
    local_currency = local_currency_out()
    unit_price = serializers.DecimalField(max_digits=12, decimal_places=2)
    line_total = serializers.DecimalField(max_digits=12, decimal_places=2)
    promotion = PromotionBrief(allow_null=True)


class QuoteOut(serializers.Serializer):
    lines = QuoteLineOut(many=True)
    total = serializers.DecimalField(max_digits=12, decimal_places=2)
    currency = serializers.CharField()
    fx_rate = serializers.SerializerMethodField()
    expires_at = serializers.DateTimeField()
    livemode = serializers.SerializerMethodField()

    def get_livemode(self, quote) -> bool:
        """The caller's mode (contract section 1), from the context: a quote is not stored."""
        return self.context["livemode"]

    def get_fx_rate(self, quote) -> dict | None:
        if quote.fx is None:
            return None
        return {
            "from": quote.fx.from_currency,
            "to": quote.fx.to_currency,
            "rate": str(quote.fx.rate),
            "setAt": quote.fx.set_at.strftime("%Y-%m-%dT%H:%M:%SZ") if quote.fx.set_at else None,
        }


class CartItemOut(serializers.Serializer):
    id = serializers.CharField(source="public_id")
    product_id = serializers.CharField(source="product.public_id")
    recipient_number = serializers.CharField()
    quantity = serializers.IntegerField()
    local_amount = local_amount_out()
    local_currency = local_currency_out()
    unit_price = serializers.DecimalField(max_digits=12, decimal_places=2)
    line_total = serializers.DecimalField(max_digits=12, decimal_places=2)
    currency = serializers.CharField()
    livemode = serializers.BooleanField()


class CartOut(serializers.Serializer):
    session_id = serializers.CharField()
    items = CartItemOut(many=True)
    total = serializers.DecimalField(max_digits=12, decimal_places=2)
    currency = serializers.CharField()
    livemode = serializers.BooleanField()


class SandboxOut(serializers.Serializer):
    balance = serializers.DecimalField(max_digits=12, decimal_places=2)
    currency = serializers.CharField()
    recharges = RechargeOut(many=True)
