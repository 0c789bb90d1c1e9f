"""Staff views of resellers' webhook endpoints and their deliveries: read-only (an account
manages its endpoints on its dashboard), secrets never shown."""

from django.contrib import admin
from django.utils.translation import gettext_lazy as _

from backoffice.admin.tools import ReadOnlyAdmin, ReadOnlyInline
from webhooks.models import Delivery, DeliveryAttempt, Event, WebhookEndpoint


@admin.register(WebhookEndpoint)
class WebhookEndpointAdmin(ReadOnlyAdmin):
    list_display = ("public_id", "account", "url", "livemode", "status", "failing_since")
    list_filter = ("livemode", "status")
    search_fields = ("public_id", "url", "account__name", "account__public_id")
    list_select_related = ("account",)
    fields = (
        "public_id",
        "account",
        "livemode",
        "url",
        "description",
        "events",
        "status",
        "disabled_reason",
        "disabled_at",
        "failing_since",
        "created_at",
    )


@admin.register(Event)
class EventAdmin(ReadOnlyAdmin):
    list_display = ("public_id", "type", "account", "livemode", "created_at")
    list_filter = ("type", "livemode")
    search_fields = ("public_id", "account__name", "account__public_id")
    list_select_related = ("account",)
    fields = ("public_id", "type", "account", "livemode", "body", "created_at")


class AttemptInline(ReadOnlyInline, admin.TabularInline):
    model = DeliveryAttempt
    fields = ("number", "status_code", "latency_ms", "error", "response_head", "created_at")
    readonly_fields = fields
    show_change_link = False


@admin.register(Delivery)
class DeliveryAdmin(ReadOnlyAdmin):
    list_display = (
        "public_id",
        "event_type",
        "endpoint",
        "state",
        "attempts",
        "last_status_code",
        "created_at",
    )
    list_filter = ("state",)
    search_fields = ("public_id", "event__public_id", "endpoint__public_id", "endpoint__url")
    list_select_related = ("event", "endpoint")
    inlines = [AttemptInline]
    fields = (
        "public_id",
        "event",
        "endpoint",
        "state",
        "attempts",
        "next_attempt_at",
        "last_status_code",
        "last_error",
        "delivered_at",
        "created_at",
    )

    @admin.display(description=_("event"))
    def event_type(self, obj: Delivery) -> str:
        return obj.event.type
