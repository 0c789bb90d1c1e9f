"""Bad input found by fuzzing the running API and the operator CLI: each is a clear 4xx
problem (or a one-line CLI error) that changes nothing. Each test failed before its fix."""

from __future__ import annotations

import pytest

from tests.helpers import assert_problem

pytestmark = pytest.mark.django_db

ME = "/api/v1/auth/me"


@pytest.mark.parametrize(
    "body",
    [
        '{"user": {"language": "\\ud800"}}',  # a lone surrogate: echoed, it broke the renderer
        '{"user": {"firstName": "a\\udfffb"}}',
        '{"user": {"firstName": "x"}, "\\ud800": 1}',
    ],
)
def test_a_lone_surrogate_in_a_json_body_is_400_invalid_json(user_api, body):
    response = user_api.patch(ME, body, content_type="application/json")
    assert_problem(response, 400, "invalid_json")
    user_api.user.refresh_from_db()
    assert user_api.user.first_name != "x"


@pytest.mark.parametrize("number", ["NaN", "Infinity", "-Infinity", "1e400", "-1e400"])
def test_numbers_json_has_not_are_400_invalid_json_and_change_nothing(user_api, number):
    """NaN and Infinity are not JSON (RFC 8259), and 1e400 is no number a double holds:
    Python's decoder took them, and a name became "nan" or "inf"."""
    before = user_api.user.first_name
    body = '{"user": {"firstName": %s}}' % number
    response = user_api.patch(ME, body, content_type="application/json")
    problem = assert_problem(response, 400, "invalid_json")
    assert number.lstrip("-") in problem["detail"]
    user_api.user.refresh_from_db()
    assert user_api.user.first_name == before
