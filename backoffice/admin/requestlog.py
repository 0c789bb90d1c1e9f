"""Staff view of the API keys' request log: read-only, bodies already redacted."""

from django.contrib import admin

from backoffice.admin.tools import ReadOnlyAdmin
from requestlog.models import ApiRequest


@admin.register(ApiRequest)
class ApiRequestAdmin(ReadOnlyAdmin):
    list_display = (
        "created_at",
        "method",
        "path",
        "status",
        "error_code",
        "latency_ms",
        "api_key",
        "account",
        "request_id",
    )
    # Distinct-value filters would scan the whole table: search by request id instead.
    list_filter = ("livemode",)
    search_fields = ("=request_id", "=public_id", "=idempotency_key", "=api_key__prefix")
    list_select_related = ("api_key", "account")
    show_full_result_count = False
    fields = (
        "public_id",
        "account",
        "api_key",
        "livemode",
        "method",
        "path",
        "query",
        "status",
        "error_code",
        "latency_ms",
        "request_id",
        "idempotency_key",
        "request_body",
        "request_bytes",
        "response_body",
        "response_bytes",
        "created_at",
    )
    ordering = ("-created_at",)
