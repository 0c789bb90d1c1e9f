"""Staff views of orders, payments, card checkouts and recharges: read-only rows, changes
through services.

Failed recharges are retried (a new debit) or refunded from the recharge list; every such
action goes through ``backoffice.services`` and lands in the audit trail.
"""

from django.contrib import admin
from django.template.response import TemplateResponse
from django.utils.formats import localize
from django.utils.html import format_html
from django.utils.translation import gettext_lazy as _
from django.utils.translation import ngettext_lazy

from backoffice import services as staff
from backoffice.admin.tools import (
    ReadOnlyAdmin,
    ReadOnlyInline,
    ReasonForm,
    breakable,
    csv_response,
    form_action,
    run_each,
    short_time,
    two_lines,
)
from backoffice.admin.upstreams import RechargeAttemptInline
from checkout.models import CardCheckout, StripeEvent
from orders.models import (
    Batch,
    Cart,
    CartItem,
    IdempotencyRecord,
    Order,
    OrderLine,
)
from payments.models import Payment
from recharges.models import Recharge, RechargeEvent
from recharges.pins import pin_masked

PAYMENT_CSV = [
    "id",
    "created_at",
    "captured_at",
    "order",
    "account",
    "account_id",
    "method",
    "status",
    "amount",
    "refunded_amount",
    "currency",
    "livemode",
]
RECHARGE_CSV = [
    "id",
    "created_at",
    "updated_at",
    "order",
    "payment",
    "account",
    "account_id",
    "product",
    "operator",
    "country",
    "recipient_number",
    "local_amount",
    "local_currency",
    "amount",
    "currency",
    "status",
    "failure_code",
    "failure_message",
    "retries",
    "refunded",
    "livemode",
]


class OrderLineInline(ReadOnlyInline, admin.TabularInline):
    model = OrderLine
    fields = ("product", "recipient_number", "quantity", "unit_price", "line_total")
    readonly_fields = fields
    show_change_link = False


class RechargeInline(ReadOnlyInline, admin.TabularInline):
    model = Recharge
    fields = ("public_id", "recipient_number", "amount", "currency", "status", "failure_code")
    readonly_fields = fields


class RechargeEventInline(ReadOnlyInline, admin.TabularInline):
    """The recharge's history: every transition, its time, cause and (staff) actor."""

    model = RechargeEvent
    fields = ("created_at", "from_status", "to_status", "note", "actor")
    readonly_fields = fields
    show_change_link = False
    verbose_name_plural = _("history")


@admin.register(Order)
class OrderAdmin(ReadOnlyAdmin):
    list_display = (
        "public_id",
        "created_at",
        "account",
        "channel",
        "total",
        "currency",
        "livemode",
        "payment_status",
    )
    list_filter = ("livemode", "channel", "currency", "payment__status")
    search_fields = ("public_id", "account__name", "account__public_id", "payment__public_id")
    list_select_related = ("account", "payment")
    date_hierarchy = "created_at"
    inlines = [OrderLineInline, RechargeInline]

    @admin.display(description=_("payment"), ordering="payment__status")
    def payment_status(self, obj: Order) -> str:
        payment = getattr(obj, "payment", None)
        return payment.get_status_display() if payment else "-"


@admin.register(Payment)
class PaymentAdmin(ReadOnlyAdmin):
    list_display = (
        "public_id",
        "created_at",
        "account",
        "method",
        "status",
        "amount",
        "refunded_amount",
        "currency",
        "livemode",
    )
    list_filter = ("status", "method", "livemode", "currency")
    search_fields = (
        "public_id",
        "order__public_id",
        "account__name",
        "account__public_id",
        "payment_intent_id",
    )
    list_select_related = ("account", "order")
    date_hierarchy = "created_at"
    actions = ["export_csv"]

    @admin.action(description=_("Export selected payments as CSV"))
    def export_csv(self, request, queryset):
        payments = list(queryset.select_related("account", "order").order_by("-id"))
        staff.staff_export(actor=request.user, what="payment", ids=[p.public_id for p in payments])
        return csv_response(
            filename="payments",
            header=PAYMENT_CSV,
            rows=(
                [
                    p.public_id,
                    p.created_at,
                    p.captured_at,
                    p.order.public_id,
                    p.account.name,
                    p.account.public_id,
                    p.method,
                    p.status,
                    p.amount,
                    p.refunded_amount,
                    p.currency,
                    p.livemode,
                ]
                for p in payments
            ),
        )


@admin.register(Recharge)
class RechargeAdmin(ReadOnlyAdmin):
    # What staff scan a list for, in five compact columns that fit beside the navigation and
    # the filters at 1280 px (docs/backoffice.md, "Lists that fit"): the rest (failure
    # message, refund, retries, mode, cost, margin, history, calls) is on the recharge's page.
    list_display = ("recharge_shown", "account_shown", "recipient_shown", "amount_shown",
                    "status_shown")  # fmt: skip
    ordering = ("-id",)  # the newest first, as staff look for them (the model keeps id order)
    list_filter = (
        "status",
        "livemode",
        "refunded",
        "product__country",
        "product__operator",
        "provider",
    )
    search_fields = (
        "public_id",
        "recipient_number",
        "order__public_id",
        "payment__public_id",
        "account__name",
        "account__public_id",
        "provider_transaction_id",
    )
    list_select_related = ("account", "product__operator", "product__country")
    date_hierarchy = "created_at"
    inlines = [RechargeEventInline, RechargeAttemptInline]
    actions = ["retry_failed", "refund_undelivered", "show_pin", "export_csv"]
    # A PIN is shown as its last 4 digits (pin_last4); the whole one only by ``show_pin``.
    exclude = ("pin_encrypted",)

    @admin.display(description=_("recharge"), ordering="created_at")
    def recharge_shown(self, obj: Recharge) -> str:
        return two_lines(obj.public_id, short_time(obj.created_at))

    @admin.display(description=_("account"), ordering="account__name")
    def account_shown(self, obj: Recharge) -> str:
        return obj.account.name  # wraps, where a linked row's name would not

    @admin.display(description=_("recipient"), ordering="recipient_number")
    def recipient_shown(self, obj: Recharge) -> str:
        operator = f"{obj.product.operator.name} ({obj.product.country_id})"
        return two_lines(obj.recipient_number, operator, nowrap=True)

    @admin.display(description=_("amount"), ordering="amount")
    def amount_shown(self, obj: Recharge) -> str:
        """The price, and below it the last 4 digits of its PIN when it has one."""
        amount = format_html(
            '<span class="nowrap">{} {}</span>', localize(obj.amount), obj.currency
        )
        if not obj.pin_last4:
            return amount
        return two_lines(amount, _("PIN %(masked)s") % {"masked": pin_masked(obj)}, nowrap=True)

    @admin.display(description=_("status"), ordering="status")
    def status_shown(self, obj: Recharge) -> str:
        """The status, then the failure's code, or the provider that has (or had) it."""
        below: str
        if obj.failure_code:
            below = breakable(obj.failure_code)
        elif obj.provider:
            below = _("via %(provider)s") % {"provider": obj.provider}
        else:
            below = ""
        return two_lines(obj.get_status_display(), below)

    @admin.action(
        description=_("Retry selected failed recharges (debits the wallet again)"),
        permissions=["operate"],
    )
    def retry_failed(self, request, queryset):
        run_each(
            self,
            request,
            queryset.order_by("pk"),
            lambda recharge: staff.staff_recharge_retry(recharge=recharge, actor=request.user),
            done_message=ngettext_lazy(
                "%(count)d recharge queued again.", "%(count)d recharges queued again.", "count"
            ),
        )

    @admin.action(
        description=_("Fail and refund selected undelivered recharges"),
        permissions=["operate"],
    )
    def refund_undelivered(self, request, queryset):
        def apply(data):
            run_each(
                self,
                request,
                queryset.exclude(status=Recharge.Status.DELIVERED).order_by("pk"),
                lambda recharge: staff.staff_recharge_refund(
                    recharge=recharge, actor=request.user, reason=data["reason"]
                ),
                done_message=ngettext_lazy(
                    "%(count)d recharge failed and refunded.",
                    "%(count)d recharges failed and refunded.",
                    "count",
                ),
            )

        return form_action(
            self,
            request,
            queryset,
            form_class=ReasonForm,
            title=_("Fail and refund recharges"),
            apply=apply,
        )

    @admin.action(
        description=_("Show the whole PIN of selected recharges (recorded)"),
        permissions=["operate"],
    )
    def show_pin(self, request, queryset):
        """Each selected PIN in full, on a page that is not kept (no-store), after a reason;
        every one shown is a recorded staff action (``recharge.pin_reveal``)."""
        if "apply" in request.POST:
            form = ReasonForm(request.POST)
            if form.is_valid():
                rows = queryset.exclude(pin_last4="").select_related("product").order_by("pk")
                shown = [
                    (recharge, pin)
                    for recharge in rows[:20]
                    if (
                        pin := staff.staff_recharge_pin_reveal(
                            recharge=recharge,
                            actor=request.user,
                            reason=form.cleaned_data["reason"],
                        )
                    )
                    is not None
                ]
                context = {
                    **self.admin_site.each_context(request),
                    "title": _("PINs shown"),
                    "opts": self.opts,
                    "shown": shown,
                }
                response = TemplateResponse(request, "backoffice/pin_reveal.html", context)
                response["Cache-Control"] = "no-store"
                return response
        return form_action(
            self,
            request,
            queryset,
            form_class=ReasonForm,
            title=_("Show PINs (recorded)"),
            apply=lambda data: None,
        )

    @admin.action(description=_("Export selected recharges as CSV"))
    def export_csv(self, request, queryset):
        recharges = list(
            queryset.select_related(
                "account", "order", "payment", "product__operator", "product__country"
            ).order_by("-id")
        )
        staff.staff_export(
            actor=request.user, what="recharge", ids=[r.public_id for r in recharges]
        )
        return csv_response(
            filename="recharges",
            header=RECHARGE_CSV,
            rows=(
                [
                    r.public_id,
                    r.created_at,
                    r.updated_at,
                    r.order.public_id,
                    r.payment.public_id,
                    r.account.name,
                    r.account.public_id,
                    r.product.public_id,
                    r.product.operator.name,
                    r.product.country_id,
                    r.recipient_number,
                    r.face_value,
                    r.product.local_currency,
                    r.amount,
                    r.currency,
                    r.status,
                    r.failure_code,
                    r.failure_message,
                    r.retries,
                    r.refunded,
                    r.livemode,
                ]
                for r in recharges
            ),
        )


@admin.register(RechargeEvent)
class RechargeEventAdmin(ReadOnlyAdmin):
    list_display = ("created_at", "recharge", "from_status", "to_status", "note", "actor")
    list_filter = ("to_status",)
    search_fields = ("recharge__public_id", "note")
    list_select_related = ("recharge", "actor")
    date_hierarchy = "created_at"


class CartItemInline(ReadOnlyInline, admin.TabularInline):
    model = CartItem
    fields = ("public_id", "product", "recipient_number", "quantity", "created_at")
    readonly_fields = fields
    show_change_link = False


@admin.register(Cart)
class CartAdmin(ReadOnlyAdmin):
    list_display = ("session_id", "account", "livemode", "created_at", "updated_at")
    list_filter = ("livemode",)
    search_fields = ("session_id", "account__name", "account__public_id")
    list_select_related = ("account",)
    inlines = [CartItemInline]


@admin.register(IdempotencyRecord)
class IdempotencyRecordAdmin(ReadOnlyAdmin):
    list_display = ("key", "account", "livemode", "response_status", "created_at")
    list_filter = ("response_status", "livemode")
    search_fields = ("key", "account__name", "account__public_id")
    list_select_related = ("account",)
    date_hierarchy = "created_at"


@admin.register(CardCheckout)
class CardCheckoutAdmin(ReadOnlyAdmin):
    list_display = ("__str__", "account", "payment_intent_id", "expires_at", "completed_at")
    list_filter = ("completed_at",)
    search_fields = (
        "payment__public_id",
        "topup__public_id",
        "payment_intent_id",
        "setup_intent_id",
        "account__name",
    )
    list_select_related = ("account", "payment", "topup")


@admin.register(StripeEvent)
class StripeEventAdmin(ReadOnlyAdmin):
    list_display = ("event_id", "type", "payment_intent_id", "received_at")
    list_filter = ("type",)
    search_fields = ("event_id", "payment_intent_id")
    date_hierarchy = "received_at"


@admin.register(Batch)
class BatchAdmin(ReadOnlyAdmin):
    """Batches (docs/contract.md §13): their order holds the money, their recharges the rest."""

    list_display = ("public_id", "account", "livemode", "recharge_count", "created_at",
                    "completed_at")  # fmt: skip
    list_filter = ("livemode",)
    search_fields = ("public_id", "order__public_id", "account__name")
    list_select_related = ("account",)
    fields = ("public_id", "account", "livemode", "order", "recharge_count", "created_by",
              "api_key", "created_at", "completed_at")  # fmt: skip
