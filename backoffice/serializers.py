"""Query and response shapes of the /admin/* API (camelCase on the wire, snake_case here)."""

from __future__ import annotations

from datetime import date, datetime, time, timedelta
from decimal import ROUND_HALF_UP

from django.utils import timezone
from django.utils.dateparse import parse_date, parse_datetime
from django.utils.translation import gettext_lazy as _
from djangorestframework_camel_case.util import camelize_re, underscore_to_camel
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers
from rest_framework.exceptions import ErrorDetail

from catalog.serializers import BenefitOut
from payments.models import Payment
from recharges.models import Recharge
from reconciliation.models import ReconciliationItem
from reseller.errors import ValidationFailed, flatten_validation_errors, refuse_unknown_params

PAGE_PARAMS = ("page", "limit")


def wire_name(name: str) -> str:
    return camelize_re.sub(underscore_to_camel, name)


# -- queries --------------------------------------------------------------------------------------


class CreatedAtField(serializers.Field):
    """A date (``2026-11-21``: the whole day, in the project's time zone) or an RFC 3339 time.

    ``end=True`` turns a date into the start of the next day, so ``createdTo`` includes it.
    """

    default_error_messages = {
        "invalid": _("Use a date (YYYY-MM-DD) or an RFC 3339 time (2026-11-21T10:00:00Z).")
    }

    def __init__(self, *, end: bool = False, **kwargs):
        self.end = end
        super().__init__(**kwargs)

    def to_internal_value(self, data) -> datetime:
        value = str(data).strip()
        try:
            # A bare date first: parse_datetime would read "2026-11-21" as its midnight.
            day = parse_date(value) if len(value) == 10 else None
            moment = None if day else parse_datetime(value)
        except ValueError:
            self.fail("invalid")
        if moment is not None:
            return moment if timezone.is_aware(moment) else timezone.make_aware(moment)
        if day is None:
            self.fail("invalid")
        if self.end:
            if day == date.max:  # no next midnight to end the range at
                self.fail("invalid")
            day = day + timedelta(days=1)
        return timezone.make_aware(datetime.combine(day, time.min))

    def to_representation(self, value):  # pragma: no cover - queries are never rendered
        return value


class MultipleChoiceCsvField(serializers.Field):
    """``?status=failed,queued`` (or the parameter repeated): a list of allowed values."""

    def __init__(self, *, choices, **kwargs):
        self.choices = list(choices)
        super().__init__(**kwargs)

    def to_internal_value(self, data) -> list[str]:
        values = data if isinstance(data, list) else [data]
        out = []
        for value in values:
            for part in str(value).split(","):
                part = part.strip()
                if not part:
                    continue
                if part not in self.choices:
                    raise serializers.ValidationError(
                        ErrorDetail(
                            _("Unknown value %(value)s; one of: %(choices)s.")
                            % {"value": part, "choices": ", ".join(self.choices)},
                            code="invalid_choice",
                        )
                    )
                out.append(part)
        return out

    def to_representation(self, value):  # pragma: no cover
        return value


class ModeField(serializers.ChoiceField):
    """``mode=live|test`` → ``livemode`` True/False."""

    def __init__(self, **kwargs):
        super().__init__(choices=["live", "test"], **kwargs)

    def to_internal_value(self, data) -> bool:  # type: ignore[override]
        return super().to_internal_value(data) == "live"


class AdminQuery(serializers.Serializer):
    """Base of the list queries: refuses unknown parameters, so a misspelt filter is a 400
    naming it instead of a silently unfiltered list."""

    multi = frozenset[str]()

    @classmethod
    def parse(cls, request) -> dict:
        params = request.query_params
        by_wire = {wire_name(name): name for name in cls().fields}  # type: ignore[arg-type]
        refuse_unknown_params(params, allowed=set(by_wire) | set(PAGE_PARAMS))
        data = {}
        for wire, name in by_wire.items():
            if wire in params:
                data[name] = params.getlist(wire) if name in cls.multi else params[wire]
        query = cls(data=data)
        if not query.is_valid():
            raise ValidationFailed(fields=flatten_validation_errors(query.errors))
        return query.validated_data


class DateRangeQuery(AdminQuery):
    created_from = CreatedAtField(required=False)
    created_to = CreatedAtField(required=False, end=True)
    mode = ModeField(required=False)

    def validate(self, data):
        start, end = data.get("created_from"), data.get("created_to")
        if start and end and start >= end:
            raise serializers.ValidationError(
                {
                    "created_to": [
                        ErrorDetail(_("createdTo must be after createdFrom."), code="invalid")
                    ]
                }
            )
        return data


class RechargeQuery(DateRangeQuery):
    multi = frozenset({"status"})
    status = MultipleChoiceCsvField(choices=Recharge.Status.values, required=False)
    account = serializers.CharField(max_length=40, required=False)
    operator = serializers.CharField(max_length=40, required=False)
    country = serializers.RegexField(r"^[A-Za-z]{2}$", required=False)
    recipient_number = serializers.CharField(max_length=20, required=False)


class PaymentQuery(DateRangeQuery):
    multi = frozenset({"status"})
    status = MultipleChoiceCsvField(choices=Payment.Status.values, required=False)
    method = serializers.ChoiceField(choices=Payment.Method.values, required=False)
    account = serializers.CharField(max_length=40, required=False)
    currency = serializers.RegexField(r"^[A-Za-z]{3}$", required=False)


class UserQuery(AdminQuery):
    q = serializers.CharField(max_length=100, required=False)
    is_b2b = serializers.BooleanField(required=False, allow_null=True, default=None)
    is_staff = serializers.BooleanField(required=False, allow_null=True, default=None)


class ProductQuery(AdminQuery):
    q = serializers.CharField(max_length=100, required=False)
    country = serializers.RegexField(r"^[A-Za-z]{2}$", required=False)
    operator = serializers.CharField(max_length=40, required=False)
    active = serializers.BooleanField(required=False, allow_null=True, default=None)
    offered = serializers.BooleanField(required=False, allow_null=True, default=None)


class ReconciliationQuery(AdminQuery):
    provider = serializers.CharField(max_length=32, required=False)
    date = serializers.DateField(required=False, input_formats=["%Y-%m-%d"])


def selector_kwargs(data: dict) -> dict:
    """Query fields → selector keyword arguments (``mode`` becomes ``livemode``)."""
    out = dict(data)
    if "mode" in out:
        out["livemode"] = out.pop("mode")
    return out


# -- responses ------------------------------------------------------------------------------------


def money():
    return serializers.DecimalField(max_digits=14, decimal_places=2)


class AdminMoneyOut(serializers.Serializer):
    currency = serializers.CharField()
    amount = money()


class AdminAccountRefOut(serializers.Serializer):
    id = serializers.CharField(source="public_id")
    name = serializers.CharField()


class AdminAccountOut(AdminAccountRefOut):
    is_b2b = serializers.BooleanField()
    discount_percent = serializers.DecimalField(max_digits=5, decimal_places=2)
    wallet_currency = serializers.CharField()


class AdminUserOut(serializers.Serializer):
    id = serializers.CharField(source="public_id")
    email = serializers.EmailField()
    first_name = serializers.CharField()
    last_name = serializers.CharField()
    is_staff = serializers.BooleanField()
    is_active = serializers.BooleanField()
    date_joined = serializers.DateTimeField()
    last_login = serializers.DateTimeField(allow_null=True)
    account = AdminAccountOut()
    active_keys = serializers.IntegerField()
    wallet = serializers.SerializerMethodField()

    @extend_schema_field(AdminMoneyOut(allow_null=True))
    def get_wallet(self, obj) -> dict | None:
        if obj.wallet_currency is None:
            return None
        return {"currency": obj.wallet_currency, "amount": f"{obj.wallet_balance:.2f}"}


class AdminOperatorRefOut(serializers.Serializer):
    id = serializers.CharField(source="public_id")
    name = serializers.CharField()


class AdminRechargeOut(serializers.Serializer):
    id = serializers.CharField(source="public_id")
    order_id = serializers.CharField(source="order.public_id")
    payment_id = serializers.CharField(source="payment.public_id")
    account = AdminAccountRefOut()
    product_id = serializers.CharField(source="product.public_id")
    product_name = serializers.CharField(source="product.name")
    operator = AdminOperatorRefOut(source="product.operator")
    country = serializers.CharField(source="product.country_id")
    recipient_number = serializers.CharField()
    local_amount = serializers.DecimalField(
        source="face_value",
        max_digits=12,
        decimal_places=2,
        help_text="What the recipient gets, in `localCurrency`; `amount` is its price.",
    )
    local_currency = serializers.CharField(source="product.local_currency")
    amount = serializers.DecimalField(max_digits=12, decimal_places=2)
    currency = serializers.CharField()
    status = serializers.CharField()
    failure_code = serializers.CharField(allow_null=True)
    failure_message = serializers.CharField(allow_null=True)
    provider = serializers.CharField(allow_null=True)
    provider_reference = serializers.CharField(source="provider_transaction_id", allow_null=True)
    # Money has two places on the wire (contract section 1): a provider's sub-cent cost is
    # rounded half up here; the books and the back office keep its four.
    cost = serializers.DecimalField(
        max_digits=14, decimal_places=2, allow_null=True, rounding=ROUND_HALF_UP
    )
    cost_currency = serializers.CharField(allow_null=True)
    margin = serializers.DecimalField(max_digits=12, decimal_places=2, allow_null=True)
    margin_currency = serializers.CharField(allow_null=True)
    attempts = serializers.IntegerField()
    retries = serializers.IntegerField()
    refunded = serializers.BooleanField()
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()
    livemode = serializers.BooleanField()
    pin_last4 = serializers.CharField(
        allow_null=True,
        help_text="The last 4 digits of a delivered PIN (never the whole code: the back "
        "office shows it by a recorded action only).",
    )

    def to_representation(self, instance):
        data = super().to_representation(instance)
        data["pin_last4"] = data["pin_last4"] or None
        names = ("failure_code", "failure_message", "provider", "provider_reference")
        for name in (*names, "cost_currency", "margin_currency"):
            data[name] = data[name] or None
        return data


class AdminProviderOut(serializers.Serializer):
    """A provider row with its health (docs/contract.md §14); never its secrets."""

    name = serializers.CharField()
    kind = serializers.CharField()
    enabled = serializers.BooleanField()
    priority = serializers.IntegerField()
    state = serializers.ChoiceField(choices=["healthy", "degraded", "open"])
    balance = serializers.DecimalField(max_digits=12, decimal_places=2, allow_null=True)
    currency = serializers.CharField(allow_null=True)
    success_rate = serializers.FloatField(allow_null=True)
    latency_p50_ms = serializers.IntegerField(allow_null=True)
    latency_p95_ms = serializers.IntegerField(allow_null=True)
    in_flight = serializers.IntegerField()


class AdminReconciliationItemOut(serializers.Serializer):
    """One discrepancy of a run, or a reversal it applied; amounts as each side recorded
    them (the cost, or the face value for a face-value mismatch)."""

    kind = serializers.ChoiceField(choices=ReconciliationItem.Kind.choices)
    recharge = serializers.SerializerMethodField()
    reference = serializers.CharField(source="our_reference", allow_null=True)
    provider_reference = serializers.CharField(allow_null=True)
    ours_status = serializers.CharField(allow_null=True)
    theirs_status = serializers.CharField(allow_null=True)
    ours_amount = serializers.DecimalField(max_digits=14, decimal_places=4, allow_null=True)
    ours_currency = serializers.CharField(allow_null=True)
    theirs_amount = serializers.DecimalField(max_digits=14, decimal_places=4, allow_null=True)
    theirs_currency = serializers.CharField(allow_null=True)
    detail = serializers.CharField()

    @extend_schema_field(serializers.CharField(allow_null=True))
    def get_recharge(self, item) -> str | None:
        return item.recharge.public_id if item.recharge is not None else None

    def to_representation(self, instance):
        data = super().to_representation(instance)
        for name in (
            "reference",
            "provider_reference",
            "ours_status",
            "theirs_status",
            "ours_currency",
            "theirs_currency",
        ):
            data[name] = data[name] or None
        return data


class AdminReconciliationOut(serializers.Serializer):
    """A reconciliation run (docs/contract.md §14): its counts and what it found."""

    id = serializers.CharField(source="public_id")
    provider = serializers.CharField()
    date = serializers.DateField(source="day")
    started_at = serializers.DateTimeField()
    finished_at = serializers.DateTimeField(allow_null=True)
    report_lines = serializers.IntegerField()
    recharges = serializers.IntegerField()
    matched = serializers.IntegerField()
    missing_here = serializers.IntegerField()
    missing_there = serializers.IntegerField()
    mismatched = serializers.IntegerField()
    reversals_applied = serializers.IntegerField()
    error = serializers.CharField(allow_null=True)
    mismatches = serializers.SerializerMethodField()
    reversals = serializers.SerializerMethodField()

    @extend_schema_field(AdminReconciliationItemOut(many=True))
    def get_mismatches(self, run) -> list[dict]:
        items = [i for i in run.items.all() if i.kind != ReconciliationItem.Kind.REVERSED]
        return AdminReconciliationItemOut(items, many=True).data  # type: ignore[return-value]

    @extend_schema_field(AdminReconciliationItemOut(many=True))
    def get_reversals(self, run) -> list[dict]:
        items = [i for i in run.items.all() if i.kind == ReconciliationItem.Kind.REVERSED]
        return AdminReconciliationItemOut(items, many=True).data  # type: ignore[return-value]

    def to_representation(self, instance):
        data = super().to_representation(instance)
        data["error"] = data["error"] or None
        return data


class AdminPaymentOut(serializers.Serializer):
    id = serializers.CharField(source="public_id")
    order_id = serializers.CharField(source="order.public_id")
    account = AdminAccountRefOut()
    method = serializers.CharField()
    status = serializers.CharField()
    amount = serializers.DecimalField(max_digits=12, decimal_places=2)
    refunded_amount = serializers.DecimalField(max_digits=12, decimal_places=2)
    currency = serializers.CharField()
    channel = serializers.CharField(source="order.channel")
    recharge_count = serializers.IntegerField()
    failure_code = serializers.CharField(allow_null=True)
    created_at = serializers.DateTimeField()
    captured_at = serializers.DateTimeField(allow_null=True)
    livemode = serializers.BooleanField()

    def to_representation(self, instance):
        data = super().to_representation(instance)
        data["failure_code"] = data["failure_code"] or None
        return data


class AdminProductOut(serializers.Serializer):
    id = serializers.CharField(source="public_id")
    sku = serializers.CharField()
    name = serializers.CharField()
    product_type = serializers.CharField(
        help_text='`airtime`, `data`, `bundle` or `pin` (contract section 17, "Kinds").'
    )
    operator = AdminOperatorRefOut()
    country = serializers.CharField(source="country_id")
    denomination = serializers.CharField()
    local_amount = serializers.DecimalField(max_digits=12, decimal_places=2, allow_null=True)
    local_currency = serializers.CharField()
    price = serializers.DecimalField(
        source="retail_price", max_digits=12, decimal_places=2, allow_null=True
    )
    currency = serializers.CharField(source="retail_currency")
    range_min = serializers.DecimalField(max_digits=12, decimal_places=2, allow_null=True)
    range_max = serializers.DecimalField(max_digits=12, decimal_places=2, allow_null=True)
    range_step = serializers.DecimalField(max_digits=12, decimal_places=2, allow_null=True)
    pricing_rate = serializers.DecimalField(max_digits=18, decimal_places=8, allow_null=True)
    pricing_fee = serializers.DecimalField(max_digits=12, decimal_places=2, allow_null=True)
    benefits = BenefitOut(many=True)
    validity = serializers.CharField(allow_null=True)
    active = serializers.BooleanField()
    offered = serializers.BooleanField(
        help_text="False while its price leaves less than PRICE_MIN_MARGIN_PERCENT over its "
        "cheapest healthy route's cost: the catalog leaves it out (docs/pricing.md)."
    )
    recharges_last_30_days = serializers.SerializerMethodField()

    def get_recharges_last_30_days(self, obj) -> int:
        return obj.recharges_last_30_days or 0


class AdminWindowOut(serializers.Serializer):
    count = serializers.IntegerField()
    totals = AdminMoneyOut(many=True)


class AdminPaymentWindowOut(AdminWindowOut):
    refunded = AdminMoneyOut(many=True)


class AdminPaymentWindowsOut(serializers.Serializer):
    today = AdminPaymentWindowOut()
    last_7_days = AdminPaymentWindowOut()
    last_30_days = AdminPaymentWindowOut()


class AdminRechargeWindowsOut(serializers.Serializer):
    today = AdminWindowOut()
    last_7_days = AdminWindowOut()
    last_30_days = AdminWindowOut()


class AdminUsersCountOut(serializers.Serializer):
    total = serializers.IntegerField()
    active = serializers.IntegerField()
    staff = serializers.IntegerField()
    new_last_30_days = serializers.IntegerField()


class AdminAccountsCountOut(serializers.Serializer):
    total = serializers.IntegerField()
    b2b = serializers.IntegerField()


class AdminKeysCountOut(serializers.Serializer):
    active = serializers.IntegerField()
    live = serializers.IntegerField()
    test = serializers.IntegerField()


class AdminStatusCountsOut(serializers.Serializer):
    queued = serializers.IntegerField()
    waitlisted = serializers.IntegerField()
    dispatched = serializers.IntegerField()
    delivered = serializers.IntegerField()
    failed = serializers.IntegerField()


class AdminPendingTopupsOut(serializers.Serializer):
    count = serializers.IntegerField()
    totals = AdminMoneyOut(many=True)


class AdminSummaryOut(serializers.Serializer):
    generated_at = serializers.DateTimeField()
    users = AdminUsersCountOut()
    accounts = AdminAccountsCountOut()
    api_keys = AdminKeysCountOut()
    payments = AdminPaymentWindowsOut(help_text="Live payments that took money, by creation day.")
    recharges = AdminRechargeWindowsOut(help_text="Live recharges, by creation day.")
    recharges_by_status = AdminStatusCountsOut(help_text="Live recharges of the last 30 days.")
    success_rate = serializers.FloatField(
        allow_null=True,
        help_text="delivered / (delivered + failed) over the last 30 days; null with neither.",
    )
    wallet_float = AdminMoneyOut(many=True, help_text="Sum of live wallet balances per currency.")
    pending_bank_topups = AdminPendingTopupsOut()
