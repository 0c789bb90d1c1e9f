"""The error contract (docs/contract.md §2): every error under /api/ is problem+json."""

import pytest
from django.test import Client, override_settings

from tests.helpers import assert_problem

pytestmark = pytest.mark.django_db


@pytest.fixture
def client():
    return Client(raise_request_exception=False)


def test_validation_error_names_fields_in_camel_case(user_api):
    body = assert_problem(
        user_api.patch("/api/v1/auth/me", {"billing": {"postalCode": "x" * 50}}),
        400,
        "validation_error",
    )
    assert body["errors"] == [
        {
            "field": "billing.postalCode",
            "code": "max_length",
            "message": body["errors"][0]["message"],
        }
    ]


def test_malformed_json_is_400_invalid_json(client):
    response = client.post("/api/v1/auth/login", "{not json", content_type="application/json")
    assert_problem(response, 400, "invalid_json")


def test_malformed_json_says_where_it_broke(client):
    """Issue 32, defect 9: the position (line, column) a person needs to fix the body."""
    body = '{\n  "email": "a@example.com"\n  "password": "x"\n}'
    response = client.post("/api/v1/auth/login", body, content_type="application/json")
    assert_problem(response, 400, "invalid_json")
    assert response.json()["detail"] == (
        "The request body is not valid JSON: line 3, column 3: Expecting ',' delimiter."
    )


def test_unknown_api_path_is_404_problem_json(client):
    assert_problem(client.get("/api/v1/no-such-thing"), 404, "not_found")


@override_settings(DEBUG=True)
def test_unknown_api_path_is_problem_json_even_in_debug(client):
    response = client.get("/api/v1/no-such-thing")
    assert_problem(response, 404, "not_found")
    assert b"<html" not in response.content.lower()


def test_wrong_method_is_405_problem_json(client):
    response = client.delete("/api/v1/auth/login")
    assert_problem(response, 405, "method_not_allowed")


def test_unsupported_media_type_is_415_problem_json(client):
    response = client.post("/api/v1/auth/login", "email=a", content_type="text/plain")
    assert_problem(response, 415, "unsupported_media_type")


@pytest.mark.urls("tests.error_urls")
def test_exception_in_an_api_view_is_500_problem_json_without_internals(client):
    response = client.get("/api/v1/boom")
    body = assert_problem(response, 500, "internal_error")
    assert b"secret internals" not in response.content
    assert "Traceback" not in body["detail"]


@pytest.mark.urls("tests.error_urls")
def test_exception_in_a_plain_django_view_under_api_is_500_problem_json(client):
    response = client.get("/api/v1/plain-boom")
    assert_problem(response, 500, "internal_error")
    assert b"secret internals" not in response.content


def test_host_not_allowed_under_api_is_400_problem_json(client):
    """Django refuses a Host outside ALLOWED_HOSTS before any view runs: still problem+json."""
    response = client.get("/api/v1/auth/me", HTTP_HOST="evil.example")
    assert_problem(response, 400, "bad_request")
    assert b"<html" not in response.content.lower()


@pytest.mark.urls("tests.error_urls")
def test_suspicious_request_in_a_plain_django_view_under_api_is_400_problem_json(client):
    response = client.get("/api/v1/plain-suspicious")
    assert_problem(response, 400, "bad_request")
    assert b"secret internals" not in response.content


@pytest.mark.urls("tests.error_urls")
def test_permission_denied_in_a_plain_django_view_under_api_is_403_problem_json(client):
    response = client.get("/api/v1/plain-forbidden")
    assert_problem(response, 403, "permission_denied")
    assert b"secret internals" not in response.content


def test_site_404_is_an_html_page(client):
    response = client.get("/no-such-page/")
    assert response.status_code == 404
    assert response["Content-Type"].startswith("text/html")


def test_every_response_carries_a_generated_request_id(client):
    first = client.get("/api/v1/auth/me")
    second = client.get("/")
    assert first["X-Request-Id"].startswith("req_")
    assert second["X-Request-Id"].startswith("req_")
    assert first["X-Request-Id"] != second["X-Request-Id"]


def test_callers_request_id_is_echoed_in_header_and_problem(client):
    response = client.get("/api/v1/auth/me", HTTP_X_REQUEST_ID="abc-123.XYZ")
    assert response["X-Request-Id"] == "abc-123.XYZ"
    assert response.json()["requestId"] == "abc-123.XYZ"


def test_unsafe_request_id_is_replaced_not_echoed(client):
    response = client.get("/api/v1/auth/me", HTTP_X_REQUEST_ID="bad id\nInjected: yes")
    assert response["X-Request-Id"].startswith("req_")


@pytest.mark.parametrize(
    "language, title",
    [("es", "No autenticado"), ("fr", "Non authentifié"), ("en", "Not authenticated")],
)
def test_accept_language_selects_the_error_language(client, language, title):
    response = client.get("/api/v1/auth/me", HTTP_ACCEPT_LANGUAGE=language)
    assert response["Content-Language"] == language
    assert response.json()["title"] == title


def test_unknown_language_falls_back_to_english(client):
    response = client.get("/api/v1/auth/me", HTTP_ACCEPT_LANGUAGE="de")
    assert response["Content-Language"] == "en"
