"""Shared DRF pieces: authentication, error documentation for the schema."""

from __future__ import annotations

from django.utils.translation import gettext_lazy as _
from drf_spectacular.utils import OpenApiResponse, inline_serializer
from rest_framework import authentication, serializers


class SessionAuthentication(authentication.SessionAuthentication):
    """The site's Django session, with CSRF enforced (never exempted)."""


class ProblemField(serializers.Serializer):
    field = serializers.CharField()
    code = serializers.CharField()
    message = serializers.CharField()


Problem = inline_serializer(
    name="Problem",
    fields={
        "type": serializers.URLField(),
        "title": serializers.CharField(),
        "status": serializers.IntegerField(),
        "code": serializers.CharField(),
        "detail": serializers.CharField(),
        "errors": ProblemField(many=True, required=False),
        "requestId": serializers.CharField(),
    },
)

PROBLEM_DESCRIPTIONS = {
    400: "Validation error (`validation_error`, `invalid_json`, …), or `ambiguous_credentials` "
    "(both `x-api-key` and `Authorization` sent), as problem details.",
    401: "`not_authenticated`, `invalid_api_key`, `api_key_revoked` or `token_invalid`.",
    402: "`insufficient_balance`: the balance is below the order total; nothing was charged.",
    403: "The credential is valid but not allowed here: `ip_not_allowed`, "
    "`web_session_required`, `api_key_required`, `b2b_not_enabled`, `test_key_required` or "
    "`permission_denied`.",
    404: "`not_found`: unknown id or an object of another account.",
    409: "`idempotency_key_in_use`: the first request with this key is still running.",
    422: "`idempotency_key_reused`: the same key was used with a different body.",
    429: "`rate_limited`: see `Retry-After` and the `RateLimit` / `RateLimit-Policy` headers.",
    503: "`service_unavailable`: a dependency is down; nothing was charged.",
}


def problems(*statuses: int) -> dict[tuple[int, str], OpenApiResponse]:
    """Schema entries for the problem responses an endpoint can return, documented with the
    media type they are sent with (application/problem+json)."""
    return {
        (status, "application/problem+json"): OpenApiResponse(
            response=Problem,
            description=PROBLEM_DESCRIPTIONS.get(status, "Problem details."),
        )
        for status in statuses
    }


class StrictSerializer(serializers.Serializer):
    """Refuses fields it does not declare, so read-only or unknown fields are never applied."""

    def to_internal_value(self, data):
        if isinstance(data, dict):
            writable = {name for name, field in self.fields.items() if not field.read_only}
            unknown = sorted(set(data) - writable)
            if unknown:
                raise serializers.ValidationError(
                    {
                        name: [
                            serializers.ErrorDetail(
                                _("This field is unknown or cannot be set."), code="unknown_field"
                            )
                        ]
                        for name in unknown
                    }
                )
        return super().to_internal_value(data)
