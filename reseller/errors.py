"""One error hierarchy and one renderer: every API error is RFC 9457 problem details.

Domain code raises ``ApplicationError`` subclasses (or DRF's own exceptions); the DRF
exception handler below and ``ApiProblemMiddleware`` turn everything into
``application/problem+json`` with a stable ``code`` (docs/contract.md §2).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.core.exceptions import RequestDataTooBig
from django.db import DatabaseError, InterfaceError, OperationalError
from django.http import Http404, JsonResponse
from django.utils.translation import gettext_lazy as _
from django.utils.translation import ngettext
from djangorestframework_camel_case.util import camelize_re, underscore_to_camel
from rest_framework import exceptions as drf
from rest_framework.response import Response

from reseller import ratelimit
from reseller.problem_types import problem_type

if TYPE_CHECKING:
    from django_stubs_ext import StrOrPromise

logger = logging.getLogger(__name__)

PROBLEM_CONTENT_TYPE = "application/problem+json"

# Titles by status for errors that do not bring their own.
STATUS_TITLES = {
    400: _("Bad request"),
    401: _("Not authenticated"),
    402: _("Payment required"),
    403: _("Forbidden"),
    404: _("Not found"),
    405: _("Method not allowed"),
    406: _("Not acceptable"),
    409: _("Conflict"),
    413: _("Request too large"),
    415: _("Unsupported media type"),
    422: _("Unprocessable request"),
    429: _("Too many requests"),
    500: _("Internal server error"),
    503: _("Service unavailable"),
}

STATUS_CODES = {
    400: "bad_request",
    401: "not_authenticated",
    403: "permission_denied",
    404: "not_found",
    405: "method_not_allowed",
    406: "not_acceptable",
    413: "request_too_large",
    415: "unsupported_media_type",
    429: "rate_limited",
    500: "internal_error",
    503: "service_unavailable",
}


class ApplicationError(Exception):
    """An error the API reports to the caller; subclasses fix the code, status and title."""

    code = "bad_request"
    status = 400
    title: StrOrPromise = _("Bad request")
    default_detail: StrOrPromise = ""

    def __init__(
        self,
        detail: str | None = None,
        *,
        fields: list[dict[str, str]] | None = None,
        headers: dict[str, str] | None = None,
        code: str | None = None,
        status: int | None = None,
    ) -> None:
        self.detail = str(detail) if detail is not None else str(self.default_detail)
        self.fields = fields
        self.headers = headers or {}
        if code:
            self.code = code
        if status:
            self.status = status
        super().__init__(self.detail)

    def as_problem(self, *, request_id: str | None) -> dict[str, Any]:
        """This error as a problem+json body (what the exception handler sends)."""
        return problem_body(
            status=self.status,
            code=self.code,
            title=self.title,
            detail=self.detail,
            request_id=request_id,
            fields=self.fields,
        )


class ValidationFailed(ApplicationError):
    code = "validation_error"
    status = 400
    title = _("Validation error")
    default_detail = _("The request has invalid fields.")


def refuse_unknown_params(given, *, allowed: set[str]) -> None:
    """A misspelt filter is a 400 naming it, never a silently unfiltered list."""
    unknown = sorted(set(given) - allowed)
    if unknown:
        raise ValidationFailed(
            _("Unknown query parameter."),  # type: ignore[arg-type]
            fields=[
                {
                    "field": name,
                    "code": "unknown_parameter",
                    "message": _("Unknown query parameter. Allowed: %(allowed)s.")
                    % {"allowed": ", ".join(sorted(allowed))},
                }
                for name in unknown
            ],
        )


class NotAuthenticated(ApplicationError):
    code = "not_authenticated"
    status = 401
    title = _("Not authenticated")
    default_detail = _("Authentication credentials were not provided.")


class PermissionDenied(ApplicationError):
    code = "permission_denied"
    status = 403
    title = _("Forbidden")
    default_detail = _("You do not have permission to perform this action.")


class NotFound(ApplicationError):
    code = "not_found"
    status = 404
    title = _("Not found")
    default_detail = _("No such object.")


class RateLimited(ApplicationError):
    code = "rate_limited"
    status = 429
    title = _("Too many requests")
    default_detail = _("Too many requests. Retry after the time in the Retry-After header.")

    def __init__(self, detail: str | None = None, *, retry_after: int, **kwargs: Any) -> None:
        headers = {"Retry-After": str(max(1, int(retry_after))), **kwargs.pop("headers", {})}
        super().__init__(detail, headers=headers, **kwargs)


class ServiceUnavailable(ApplicationError):
    code = "service_unavailable"
    status = 503
    title = _("Service unavailable")
    default_detail = _("A service we depend on is unavailable. Nothing was charged; retry later.")


def problem_body(
    *,
    status: int,
    code: str,
    title: StrOrPromise,
    detail: StrOrPromise,
    request_id: str | None,
    fields: list[dict[str, str]] | None = None,
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "type": problem_type(code),  # a page of ours explaining the code
        "title": str(title),
        "status": status,
        "code": code,
        "detail": str(detail),
    }
    if fields:
        body["errors"] = fields
    body["requestId"] = request_id
    return body


def problem_response(
    request, *, status: int, code: str, detail: str = "", title: str = "", fields=None, headers=None
) -> JsonResponse:
    """A plain Django response carrying problem details (for middleware and URL handlers)."""
    body = problem_body(
        status=status,
        code=code,
        title=title or STATUS_TITLES.get(status, _("Error")),
        detail=detail or title or STATUS_TITLES.get(status, _("Error")),
        request_id=getattr(request, "request_id", None),
        fields=fields,
    )
    response = JsonResponse(body, status=status, content_type=PROBLEM_CONTENT_TYPE)
    for name, value in (headers or {}).items():
        response[name] = value
    return response


def _field_path(parts: list[str]) -> str:
    path = ""
    for part in parts:
        if part.isdigit():
            path += f"[{part}]"
        else:
            path += ("." if path else "") + camelize_re.sub(underscore_to_camel, part)
    return path


def flatten_validation_errors(detail: Any, parts: list[str] | None = None) -> list[dict[str, str]]:
    """Turn DRF's nested error dict into ``[{"field": "items[0].recipientNumber", ...}]``."""
    parts = parts or []
    out: list[dict[str, str]] = []
    if isinstance(detail, dict):
        for key, value in detail.items():
            sub = parts if key in ("non_field_errors", "__all__") else [*parts, str(key)]
            out.extend(flatten_validation_errors(value, sub))
    elif isinstance(detail, list):
        if all(isinstance(item, drf.ErrorDetail | str) for item in detail):
            for item in detail:
                out.append(
                    {
                        "field": _field_path(parts),
                        "code": _field_code(getattr(item, "code", None)),
                        "message": str(item),
                    }
                )
        else:
            for index, item in enumerate(detail):
                if item:
                    out.extend(flatten_validation_errors(item, [*parts, str(index)]))
    else:
        out.append(
            {
                "field": _field_path(parts),
                "code": _field_code(getattr(detail, "code", None)),
                "message": str(detail),
            }
        )
    return out


_FIELD_CODE_NAMES = {"invalid": "invalid", "null": "required", "blank": "required"}


def _field_code(code: str | None) -> str:
    if not code:
        return "invalid"
    return _FIELD_CODE_NAMES.get(code, code)


# Field errors that are a problem of their own when they are a request's only errors: its
# code, and its title (docs/errors.md). An order line's refused ``localAmount`` is 400
# ``invalid_amount`` (contract section 17), each line still named in ``errors``.
OWN_PROBLEM_FIELD_CODES: dict[str, StrOrPromise] = {"invalid_amount": _("Invalid amount")}


def _own_problem(fields: list[dict[str, str]]) -> tuple[str, StrOrPromise, str] | None:
    """The code, title and detail of a validation failure whose every field error has one
    code of ``OWN_PROBLEM_FIELD_CODES``: the detail is the first error's message (it names
    what is accepted), and says how many more fields have that code."""
    codes = {field["code"] for field in fields}
    if len(codes) != 1 or not codes <= OWN_PROBLEM_FIELD_CODES.keys():
        return None
    (code,) = codes
    detail = fields[0]["message"]
    more = len(fields) - 1
    if more:
        detail += " " + ngettext(
            "%(count)d more amount is refused: see errors.",
            "%(count)d more amounts are refused: see errors.",
            more,
        ) % {"count": more}
    return code, OWN_PROBLEM_FIELD_CODES[code], detail


def _from_drf(
    exc: drf.APIException,
) -> tuple[int, str, StrOrPromise, StrOrPromise, list | None, dict]:
    status = exc.status_code
    headers: dict[str, str] = {}
    if isinstance(exc, drf.ValidationError):
        fields = flatten_validation_errors(exc.detail)
        own = _own_problem(fields)
        if own is not None:
            return (400, *own, fields, headers)
        return (
            400,
            "validation_error",
            _("Validation error"),
            _("The request has invalid fields."),
            fields,
            headers,
        )
    if isinstance(exc, drf.ParseError):
        return (400, "invalid_json", _("Invalid JSON"), str(exc.detail), None, headers)
    if isinstance(exc, drf.Throttled):
        wait = int(exc.wait or 1)  # type: ignore[attr-defined]
        headers["Retry-After"] = str(max(1, wait))
        return (429, "rate_limited", _("Too many requests"), str(exc.detail), None, headers)
    if isinstance(exc, drf.NotAuthenticated):
        return (401, "not_authenticated", _("Not authenticated"), str(exc.detail), None, headers)
    if isinstance(exc, drf.AuthenticationFailed):
        code = "token_invalid"
        detail = exc.detail
        if isinstance(detail, dict):
            detail = detail.get("detail", _("The token is invalid or expired."))  # type: ignore[arg-type]
        return (401, code, _("Not authenticated"), str(detail), None, headers)
    if isinstance(exc, drf.MethodNotAllowed):
        return (405, "method_not_allowed", _("Method not allowed"), str(exc.detail), None, headers)
    code = STATUS_CODES.get(status, "error")
    detail = exc.detail if not isinstance(exc.detail, dict | list) else exc.default_detail  # type: ignore[assignment]
    return (status, code, STATUS_TITLES.get(status, _("Error")), str(detail), None, headers)


def exception_handler(exc: Exception, context: dict) -> Response:
    """DRF's EXCEPTION_HANDLER: every exception, expected or not, becomes problem details."""
    request = context.get("request")
    headers: dict[str, str] = {}
    if isinstance(exc, ApplicationError):
        status, code, title, detail, fields = (
            exc.status,
            exc.code,
            exc.title,
            exc.detail,
            exc.fields,
        )
        headers.update(exc.headers)
    elif isinstance(exc, Http404):
        status, code, title, detail, fields = (
            404,
            "not_found",
            _("Not found"),
            _("No such object."),  # type: ignore[assignment]
            None,
        )
    elif isinstance(exc, RequestDataTooBig):
        status, code, title, detail, fields = (
            413,
            "request_too_large",
            _("Request too large"),
            _("The request body is larger than this service accepts."),  # type: ignore[assignment]
            None,
        )
    elif isinstance(exc, DjangoPermissionDenied):
        status, code, title, detail, fields = (
            403,
            "permission_denied",
            _("Forbidden"),
            _("You do not have permission to perform this action."),  # type: ignore[assignment]
            None,
        )
    elif isinstance(exc, drf.APIException):
        status, code, title, detail, fields, headers = _from_drf(exc)  # type: ignore[assignment]
        if isinstance(exc, drf.AuthenticationFailed | drf.NotAuthenticated) and request:
            view = context.get("view")
            auth_header = view.get_authenticate_header(request) if view else None
            if auth_header:
                headers["WWW-Authenticate"] = auth_header
    elif isinstance(exc, OperationalError | InterfaceError) or _is_redis_error(exc):
        logger.exception("a dependency is unavailable")
        status, code, title, detail, fields = (
            503,
            "service_unavailable",
            _("Service unavailable"),
            ServiceUnavailable.default_detail,  # type: ignore[assignment]
            None,
        )
        headers["Retry-After"] = "5"
    else:
        if isinstance(exc, DatabaseError):
            logger.exception("database error")
        else:
            logger.exception("unhandled error in API view")
        status, code, title, detail, fields = (
            500,
            "internal_error",
            _("Internal server error"),
            _("Something went wrong on our side. Nothing was charged twice; retry later."),  # type: ignore[assignment]
            None,
        )
    body = problem_body(
        status=status,
        code=code,
        title=title,
        detail=detail,
        fields=fields,
        request_id=getattr(request, "request_id", None) if request else None,
    )
    if status in (401, 403) and request is not None:
        # Refused by the view after the throttles counted it: 401/403 use no quota (§7).
        ratelimit.give_back(getattr(request, "rate_limit_hits", ()))
    _rollback_if_atomic()
    return Response(body, status=status, headers=headers, content_type=PROBLEM_CONTENT_TYPE)


def _is_redis_error(exc: Exception) -> bool:
    try:
        from redis.exceptions import ConnectionError as RedisConnectionError
        from redis.exceptions import TimeoutError as RedisTimeoutError
    except ImportError:  # pragma: no cover - redis is a dependency
        return False
    return isinstance(exc, RedisConnectionError | RedisTimeoutError)


def _rollback_if_atomic() -> None:
    from rest_framework.views import set_rollback

    set_rollback()
