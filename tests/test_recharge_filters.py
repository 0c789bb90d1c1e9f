"""The recharge search's filters (orders/filters.py): a bad value is a 400 problem+json that
names each bad parameter with its code, and an empty one is refused, never read as no filter."""

from __future__ import annotations

import pytest

from tests.factories import UserFactory, make_key
from tests.helpers import assert_problem, client_for

pytestmark = pytest.mark.django_db
B2B = "/api/v1/api-access/b2b/recharges"


@pytest.fixture
def shop():
    _key, plaintext = make_key(UserFactory(), mode="live")
    return client_for(plaintext)


@pytest.mark.parametrize(
    "query, errors",
    [
        ("status=lost", [("status[0]", "invalid_choice")]),
        (
            "status=delivered,lost&status=gone",
            [("status[1]", "invalid_choice"), ("status[2]", "invalid_choice")],
        ),
        ("status=DELIVERED", [("status[0]", "invalid_choice")]),
        ("recipientNumber=", [("recipientNumber", "required")]),
        ("recipientNumber=" + "9" * 33, [("recipientNumber", "max_length")]),
        ("orderId=%20", [("orderId", "required")]),
        ("orderId=" + "x" * 65, [("orderId", "max_length")]),
        ("createdAfter=yesterday", [("createdAfter", "invalid")]),
        ("createdBefore=", [("createdBefore", "invalid")]),
        ("createdAfter=2026-13-01T00:00:00Z", [("createdAfter", "invalid")]),
        ("idempotencyKey=" + "k" * 256, [("idempotencyKey", "max_length")]),
        (
            "idempotencyKey=&createdAfter=x&status=lost",
            [
                ("status[0]", "invalid_choice"),
                ("createdAfter", "invalid"),
                ("idempotencyKey", "required"),
            ],
        ),
    ],
)
def test_a_bad_filter_value_is_a_400_naming_it(shop, query, errors):
    problem = assert_problem(shop.get(f"{B2B}?{query}"), 400, "validation_error")
    assert [(e["field"], e["code"]) for e in problem["errors"]] == errors
    assert all(e["message"] for e in problem["errors"])


def test_the_messages_are_those_of_the_other_query_errors(shop):
    problem = assert_problem(shop.get(f"{B2B}?status=delivered,lost"), 400, "validation_error")
    # Issue 32, defect 9: the message lists what would have been valid.
    assert problem["errors"][0]["message"] == (
        '"lost" is not a valid choice. Valid statuses: queued, waitlisted, dispatched, '
        "delivered, failed, reversed, processing, success, rejected, timeout."
    )
    problem = assert_problem(shop.get(f"{B2B}?orderId=" + "x" * 65), 400, "validation_error")
    assert problem["errors"][0]["message"] == "Ensure this field has no more than 64 characters."


@pytest.mark.parametrize(
    "query",
    [
        "status=",
        "status=,,",
        "createdAfter=2026-01-01",
        "createdAfter=2026-01-01T00:00:00%2B02:00",
        "createdBefore=2026-01-01%2000:00",
        "recipientNumber=%20%2B525512345678",
    ],
)
def test_good_filter_values_are_accepted(shop, query):
    response = shop.get(f"{B2B}?{query}")
    assert response.status_code == 200, response.content
    assert response.json()["count"] == 0
