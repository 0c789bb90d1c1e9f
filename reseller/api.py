"""Shared DRF pieces: authentication, error documentation for the schema."""

from __future__ import annotations

import json

from django.conf import settings
from django.utils.translation import gettext_lazy as _
from djangorestframework_camel_case.parser import CamelCaseJSONParser
from djangorestframework_camel_case.util import underscoreize
from drf_spectacular.utils import OpenApiResponse, inline_serializer
from rest_framework import authentication, serializers
from rest_framework.exceptions import ParseError

from reseller.money import is_plain_decimal
from reseller.openapi_examples import PROBLEM_JSON, problem_examples
from reseller.problem_types import PROBLEM_TYPES


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
    "`web_session_required`, `api_key_required`, `b2b_not_enabled`, `test_key_required`, "
    "`account_suspended` or `permission_denied`.",
    404: "`not_found`: unknown id or an object of another account.",
    409: "`idempotency_key_in_use`: the first request with this key is still running; "
    "`product_unavailable`: a product is no longer offered (no provider sells it over cost).",
    422: "`idempotency_key_reused`: the same key was used with a different body.",
    429: "`rate_limited`: see `Retry-After` and the `RateLimit` / `RateLimit-Policy` headers.",
    503: "`service_unavailable`: a dependency is down; nothing was charged.",
}


# The codes each status stands for by default (as PROBLEM_DESCRIPTIONS words them): one example
# each. An operation adds its own with ``problems(..., extra=(...))``.
PROBLEM_CODES = {
    400: ("validation_error", "invalid_json", "ambiguous_credentials"),
    401: ("not_authenticated", "invalid_api_key", "api_key_revoked", "token_invalid"),
    402: ("insufficient_balance",),
    403: (
        "ip_not_allowed",
        "web_session_required",
        "api_key_required",
        "b2b_not_enabled",
        "test_key_required",
        "account_suspended",
        "permission_denied",
    ),
    404: ("not_found",),
    409: ("idempotency_key_in_use", "product_unavailable"),
    422: ("idempotency_key_reused",),
    429: ("rate_limited",),
    503: ("service_unavailable",),
}


# What placing an order can answer; a B2B order (or batch) needs an Idempotency-Key too.
ORDER_STATUSES = (400, 401, 402, 403, 409, 422, 429)
B2B_ORDER_CODES = ("currency_mismatch", "idempotency_key_required", "invalid_amount")


def problems(*statuses: int, extra: tuple[str, ...] = ()) -> dict[tuple[int, str], OpenApiResponse]:
    """Schema entries for the problem responses an endpoint can return, documented with the
    media type they are sent with (application/problem+json), each with an example per code:
    the status's usual codes, and those of ``extra`` that have this status."""
    responses: dict[tuple[int, str], OpenApiResponse] = {}
    for status in statuses:
        codes = PROBLEM_CODES.get(status, ()) + tuple(
            code for code in extra if status in PROBLEM_TYPES[code].statuses
        )
        responses |= problem(PROBLEM_DESCRIPTIONS.get(status, "Problem details."), status, *codes)
    return responses


def problem(description: str, status: int, *codes: str) -> dict[tuple[int, str], OpenApiResponse]:
    """One problem response: its description and an example per code."""
    return {
        (status, PROBLEM_JSON): OpenApiResponse(
            response=Problem,
            description=description,
            examples=problem_examples(status, codes),
        )
    }


class PlainDecimalField(serializers.DecimalField):
    """A decimal whose string is written as an amount is (``reseller.money.is_plain_decimal``):
    DRF's DecimalField reads whatever Decimal() reads, "1_000" as 1000 and "١٢٣" as 123. A JSON
    number is read as DRF reads it."""

    def to_internal_value(self, data):
        if isinstance(data, str) and not is_plain_decimal(data.strip()):
            self.fail("invalid")
        return super().to_internal_value(data)


class MoneyString(PlainDecimalField):
    """An amount as the contract writes money: a decimal string (``"12.50"``), at most two
    places; a JSON number is refused (a float is not an amount of money). Every amount of
    money a request sends (a transfer, a card top-up) is one."""

    default_error_messages = {
        "not_a_string": _('An amount is a decimal string with two places, e.g. "12.50".')
    }

    def to_internal_value(self, data):
        if not isinstance(data, str):
            self.fail("not_a_string")
        return super().to_internal_value(data)


class JsonIntegerField(serializers.IntegerField):
    """An integer that is a JSON integer: ``"1"``, ``" 1"``, ``1.0`` and ``true`` are refused
    (DRF's IntegerField would coerce them). The contract says a JSON integer."""

    default_error_messages = {"invalid": _("A whole number (a JSON integer) is required.")}

    def to_internal_value(self, data):
        if type(data) is not int:  # bool is an int subclass: refused too
            self.fail("invalid")
        return super().to_internal_value(data)


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


class JsonParser(CamelCaseJSONParser):
    """JSON bodies, camelCase on the wire: nested at most ``settings.JSON_MAX_DEPTH`` levels.

    A deeper body (or one the decoder cannot nest) is 400 ``invalid_json`` before anything
    recurses over it; ``addressLine1`` becomes ``address_line1`` (no underscore before a digit,
    the inverse of how the renderer writes it).
    """

    json_underscoreize = {"no_underscore_before_number": True}

    def parse(self, stream, media_type=None, parser_context=None):
        parser_context = parser_context or {}
        encoding = parser_context.get("encoding", settings.DEFAULT_CHARSET)
        try:
            data = json.loads(
                stream.read().decode(encoding),
                parse_constant=_refuse_constant,
                parse_float=_finite_float,
            )
        except _NotJson as exc:
            raise ParseError(
                _("The request body is not valid JSON: %(token)s is not a JSON number.")
                % {"token": exc.token}
            ) from exc
        except json.JSONDecodeError as exc:
            # Where it broke, as an editor counts: "line 3, column 14: Expecting ',' delimiter".
            raise ParseError(
                _("The request body is not valid JSON: line %(line)d, column %(column)d: %(why)s.")
                % {"line": exc.lineno, "column": exc.colno, "why": exc.msg}
            ) from exc
        except (ValueError, RecursionError) as exc:  # not UTF-8, or nested past the decoder
            raise ParseError(_("The request body is not valid JSON.")) from exc
        depth, text_ok = _shape(data)
        if depth > settings.JSON_MAX_DEPTH:
            raise ParseError(
                _("The JSON body is nested more than %(depth)d levels.")
                % {"depth": settings.JSON_MAX_DEPTH}
            )
        if not text_ok:
            raise ParseError(
                _("The request body is not valid JSON: a string has a lone UTF-16 surrogate.")
            )
        return underscoreize(data, **self.json_underscoreize)


class _NotJson(ValueError):
    """A number Python's decoder takes but JSON has not (RFC 8259): NaN, ±Infinity, 1e400."""

    def __init__(self, token: str) -> None:
        self.token = token
        super().__init__(token)


def _refuse_constant(token: str):
    raise _NotJson(token)


def _finite_float(token: str) -> float:
    value = float(token)
    if value in (float("inf"), float("-inf")):
        raise _NotJson(token)
    return value


def _shape(data) -> tuple[int, bool]:
    """How deeply objects and arrays nest in a decoded JSON value, and whether every string
    (keys too) is text: a ``\\ud800`` escape decodes to a lone surrogate, which no UTF-8
    column, log line or response can hold. Iterative: no recursion."""
    deepest, text_ok, stack = 0, True, [(data, 1)]
    while stack:
        value, level = stack.pop()
        children: list
        if isinstance(value, str):
            text_ok = text_ok and _is_text(value)
            continue
        if isinstance(value, dict):
            text_ok = text_ok and all(_is_text(key) for key in value)
            children = list(value.values())
        elif isinstance(value, list):
            children = value
        else:
            continue
        deepest = max(deepest, level)
        stack.extend((child, level + 1) for child in children)
    return deepest, text_ok


def _is_text(value: str) -> bool:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True
