"""API fuzzing: schemathesis generates requests from /api/v1/schema/ for every operation and
sends each one with the credentials of every role, in process through the WSGI application.

For every response: no 5xx, the status code and the body are those the schema documents, and
every 4xx is problem details (application/problem+json with status and code). Bounded by
FUZZ_MAX_EXAMPLES (default 8 per operation) so the run takes well under two minutes.
"""

from __future__ import annotations

import os
from decimal import Decimal

import pytest
import schemathesis
from django.core import signals
from django.db import close_old_connections
from hypothesis import HealthCheck, given, settings
from schemathesis.checks import (
    content_type_conformance,
    not_a_server_error,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from accounts.services import account_set_b2b
from reseller.wsgi import application
from tests.factories import UserFactory, make_key
from tests.helpers import assert_ledger_balanced, bearer
from wallet.services import wallet_topup_manual

pytestmark = pytest.mark.django_db

MAX_EXAMPLES = int(os.environ.get("FUZZ_MAX_EXAMPLES", "8"))
PROBLEM = "application/problem+json"


@pytest.fixture(scope="module")
def api_schema():
    """The schema, read once for every operation of the module (drf-spectacular builds it
    anew for each request of /api/v1/schema/: the module took 172 s with one read a test, 71 s
    with one read in all)."""
    # The WSGI handler closes the database connection when a request ends, as in production;
    # inside a test transaction it must stay open (django.test.Client does the same).
    signals.request_started.disconnect(close_old_connections)
    signals.request_finished.disconnect(close_old_connections)
    try:
        yield schemathesis.openapi.from_wsgi("/api/v1/schema/", application)
    finally:
        signals.request_started.connect(close_old_connections)
        signals.request_finished.connect(close_old_connections)


def _operations() -> list[tuple[str, str]]:
    """(METHOD, path) of every documented operation, read from the schema generator.

    The schemathesis pytest plugin (``from_fixture``/``parametrize``) does not run on pytest 9,
    so each operation is a parameter and its cases come from ``operation.as_strategy()``.
    """
    from drf_spectacular.generators import SchemaGenerator

    paths = SchemaGenerator().get_schema(request=None, public=True)["paths"]
    methods = {"get", "post", "put", "patch", "delete"}
    return sorted((m.upper(), path) for path, item in paths.items() for m in item if m in methods)


OPERATIONS = _operations()


@pytest.fixture
def roles(db) -> dict[str, dict[str, str]]:
    """Headers of each role: anonymous, a user's JWT, live and test keys, a B2B key, staff."""
    user = UserFactory()
    wallet_topup_manual(account=user.account, amount=Decimal("100.00"))
    _key, live = make_key(user, mode="live", name="Live")
    _key, test = make_key(user, mode="test", name="Test")
    reseller = UserFactory()
    account_set_b2b(account=reseller.account, is_b2b=True)
    wallet_topup_manual(account=reseller.account, amount=Decimal("100.00"))
    _key, b2b = make_key(reseller, mode="live", name="B2B")
    staff = UserFactory(is_staff=True, is_superuser=True)
    return {
        "anonymous": {},
        "user": bearer(user),
        "live-key": {"x-api-key": live},
        "test-key": {"x-api-key": test},
        "b2b-key": {"x-api-key": b2b},
        "staff": bearer(staff),
    }


def _wire(headers: dict[str, str]) -> dict[str, str]:
    """Test-client META names (HTTP_AUTHORIZATION) to the header names sent on the wire."""
    return {
        ("Authorization" if name == "HTTP_AUTHORIZATION" else name): value
        for name, value in headers.items()
    }


def problem_details_on_errors(ctx, response, case) -> bool | None:
    """Every 4xx is RFC 9457 problem details with a status and a stable code."""
    if 400 <= response.status_code < 500:
        content_type = response.headers.get("content-type", [""])
        content_type = content_type[0] if isinstance(content_type, list) else content_type
        assert content_type.startswith(PROBLEM), (
            f"{response.status_code} answered with {content_type!r}, not {PROBLEM}"
        )
        body = response.json()
        assert body.get("status") == response.status_code, body
        assert body.get("code"), body
    return None


CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
    problem_details_on_errors,
]


@pytest.mark.parametrize(("method", "path"), OPERATIONS, ids=[f"{m} {p}" for m, p in OPERATIONS])
def test_every_operation_answers_as_documented_for_every_role(
    api_schema, roles, stripe_local, method, path
):
    # stripe_local: the schema's examples are valid requests (a card top-up of 200.00 EUR), so
    # the card endpoints reach Stripe; without one they would answer 503.
    operation = api_schema.find_operation_by_path(method, path)

    @given(case=operation.as_strategy())
    @settings(
        max_examples=MAX_EXAMPLES,
        deadline=None,
        suppress_health_check=list(HealthCheck),
        derandomize=True,
        database=None,
    )
    def fuzz(case):
        # The credentials are the role's: drop those generated from the security schemes.
        for name in list(case.headers or {}):
            if name.lower() in {"authorization", "x-api-key", "cookie"}:
                del case.headers[name]
        if case.cookies:
            case.cookies.clear()
        for role, headers in roles.items():
            extra = _wire(headers)
            response = case.call(headers=extra)
            try:
                case.validate_response(response, checks=CHECKS, headers=extra)
            except Exception as exc:
                exc.add_note(f"role: {role}; request: {case.method} {case.formatted_path}")
                raise

    fuzz()
    assert_ledger_balanced()
