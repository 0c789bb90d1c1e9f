"""Login, token refresh and /auth/me (docs/contract.md §3)."""

import time

import pytest
import time_machine
from django.test import override_settings

from accounts.models import Account, BillingProfile, User
from tests.factories import PASSWORD, UserFactory
from tests.helpers import assert_problem

pytestmark = pytest.mark.django_db

LOGIN = "/api/v1/auth/login"
REFRESH = "/api/v1/auth/refresh"
ME = "/api/v1/auth/me"


def test_login_with_email_and_password_returns_tokens_and_user(api, user):
    response = api.post(LOGIN, {"email": user.email.upper(), "password": PASSWORD})
    assert response.status_code == 200
    body = response.json()
    assert set(body) == {"access", "refresh", "user"}
    assert body["user"]["email"] == user.email
    assert body["user"]["id"] == user.public_id
    me = api.get(ME, HTTP_AUTHORIZATION=f"Bearer {body['access']}")
    assert me.status_code == 200


def test_login_with_wrong_password_or_unknown_email_is_the_same_401(api, user):
    wrong = assert_problem(
        api.post(LOGIN, {"email": user.email, "password": "nope"}), 401, "not_authenticated"
    )
    unknown = assert_problem(
        api.post(LOGIN, {"email": "ghost@example.com", "password": "nope"}),
        401,
        "not_authenticated",
    )
    assert wrong["detail"] == unknown["detail"]


def test_login_of_inactive_user_is_refused(api):
    user = UserFactory(is_active=False)
    assert_problem(
        api.post(LOGIN, {"email": user.email, "password": PASSWORD}), 401, "not_authenticated"
    )


def test_login_without_fields_is_400_with_field_errors(api):
    body = assert_problem(api.post(LOGIN, {}), 400, "validation_error")
    assert {e["field"] for e in body["errors"]} == {"email", "password"}


@pytest.fixture
def _fresh_login_window(settings):
    """Login limits count per fixed window: start at the first second of one (the clock
    moves there and ticks on), so a test's attempts never straddle two windows."""
    window = settings.LOGIN_RATE_WINDOW_SECONDS
    with time_machine.travel((int(time.time()) // window + 1) * window + 1, tick=True):
        yield


@pytest.mark.usefixtures("_fresh_login_window")
@override_settings(LOGIN_RATE_PER_EMAIL=3, LOGIN_RATE_PER_ADDRESS=100)
def test_login_attempts_are_limited_per_email(api, user):
    for _ in range(3):
        api.post(LOGIN, {"email": user.email, "password": "wrong"})
    response = api.post(LOGIN, {"email": user.email, "password": PASSWORD})
    assert_problem(response, 429, "rate_limited")
    assert int(response["Retry-After"]) >= 1
    assert "RateLimit-Policy" in response
    # another email from the same address is still allowed
    other = UserFactory()
    assert api.post(LOGIN, {"email": other.email, "password": PASSWORD}).status_code == 200


@pytest.mark.usefixtures("_fresh_login_window")
@override_settings(LOGIN_RATE_PER_EMAIL=100, LOGIN_RATE_PER_ADDRESS=3)
def test_login_attempts_are_limited_per_address(api, user):
    for n in range(3):
        api.post(LOGIN, {"email": f"guess{n}@example.com", "password": "wrong"})
    assert_problem(
        api.post(LOGIN, {"email": user.email, "password": PASSWORD}), 429, "rate_limited"
    )
    # a different client address is not affected
    response = api.post(LOGIN, {"email": user.email, "password": PASSWORD}, REMOTE_ADDR="10.9.8.7")
    assert response.status_code == 200


def test_refresh_rotates_the_token_and_the_old_one_is_refused(api, user):
    tokens = api.post(LOGIN, {"email": user.email, "password": PASSWORD}).json()
    response = api.post(REFRESH, {"refresh": tokens["refresh"]})
    assert response.status_code == 200
    fresh = response.json()
    assert fresh["refresh"] != tokens["refresh"]
    assert api.get(ME, HTTP_AUTHORIZATION=f"Bearer {fresh['access']}").status_code == 200
    assert_problem(api.post(REFRESH, {"refresh": tokens["refresh"]}), 401, "token_invalid")


def test_garbage_refresh_token_is_401_token_invalid(api):
    assert_problem(api.post(REFRESH, {"refresh": "not-a-token"}), 401, "token_invalid")


def test_access_token_expires_after_15_minutes(api, user):
    with time_machine.travel("2026-11-21 10:00:00Z", tick=False):
        access = api.post(LOGIN, {"email": user.email, "password": PASSWORD}).json()["access"]
    with time_machine.travel("2026-11-21 10:14:00Z", tick=False):
        assert api.get(ME, HTTP_AUTHORIZATION=f"Bearer {access}").status_code == 200
    with time_machine.travel("2026-11-21 10:16:00Z", tick=False):
        assert_problem(api.get(ME, HTTP_AUTHORIZATION=f"Bearer {access}"), 401, "token_invalid")


def test_me_without_credentials_is_401_not_authenticated(api):
    assert_problem(api.get(ME), 401, "not_authenticated")


def test_me_returns_user_account_and_billing_in_camel_case(user_api, user):
    body = user_api.get(ME).json()
    assert body["user"] == {
        "id": user.public_id,
        "email": user.email,
        "firstName": "Test",
        "lastName": "User",
        "phone": "",
        "language": "en",
        "isStaff": False,
    }
    assert body["account"]["isB2b"] is False
    assert body["account"]["walletCurrency"] == "EUR"
    assert body["account"]["discountPercent"] == "0.00"
    assert set(body["billing"]) == {
        "companyName",
        "vatNumber",
        "addressLine1",
        "addressLine2",
        "city",
        "postalCode",
        "country",
    }


def test_me_patch_updates_profile_account_name_and_billing(user_api, user):
    response = user_api.patch(
        ME,
        {
            "user": {"firstName": "Ana", "phone": "+34 600 123 456", "language": "es"},
            "account": {"name": "Ana Telecom SL"},
            "billing": {
                "companyName": "Ana Telecom SL",
                "vatNumber": "ESB12345678",
                "city": "Madrid",
                "country": "es",
            },
        },
    )
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["user"]["firstName"] == "Ana"
    assert body["user"]["phone"] == "+34600123456"
    assert body["account"]["name"] == "Ana Telecom SL"
    assert body["billing"]["country"] == "ES"
    user.refresh_from_db()
    assert user.language == "es"
    assert user.account.billing.city == "Madrid"


@pytest.mark.parametrize(
    "payload, field",
    [
        ({"user": {"isStaff": True}}, "user.isStaff"),
        ({"user": {"email": "new@example.com"}}, "user.email"),
        ({"account": {"isB2b": True}}, "account.isB2b"),
        ({"account": {"discountPercent": "50.00"}}, "account.discountPercent"),
        ({"balance": "1000.00"}, "balance"),
    ],
)
def test_me_patch_refuses_read_only_and_unknown_fields_and_applies_nothing(
    user_api, user, payload, field
):
    payload = {**payload, "user": {**payload.get("user", {}), "firstName": "Changed"}}
    body = assert_problem(user_api.patch(ME, payload), 400, "validation_error")
    assert {"field": field, "code": "unknown_field"}.items() <= body["errors"][0].items()
    user.refresh_from_db()
    assert user.first_name == "Test"
    assert user.is_staff is False
    assert user.email.startswith("user")
    account = Account.objects.get(pk=user.account_id)
    assert account.is_b2b is False and account.discount_percent == 0


def test_me_patch_with_bad_phone_names_the_field(user_api):
    body = assert_problem(user_api.patch(ME, {"user": {"phone": "12345"}}), 400, "validation_error")
    assert body["errors"][0]["field"] == "user.phone"
    assert body["errors"][0]["code"] == "invalid_phone_number"


@pytest.mark.parametrize("country", ["SP", "sp", "XX", "E1"])
def test_a_billing_country_must_be_a_real_iso_code(user_api, user, country):
    body = assert_problem(
        user_api.patch(ME, {"billing": {"country": country, "city": "Madrid"}}),
        400,
        "validation_error",
    )
    assert {"field": "billing.country", "code": "invalid_country"}.items() <= body["errors"][
        0
    ].items()
    assert not BillingProfile.objects.filter(account=user.account, city="Madrid").exists()


def test_create_user_command_makes_user_with_account(capsys):
    from django.core.management import call_command

    call_command(
        "create_user",
        "--email",
        "Shop@Example.com",
        "--password",
        "pw-123456789",
        "--b2b",
        "--name",
        "Shop Ltd",
    )
    user = User.objects.get(email="shop@example.com")
    assert user.check_password("pw-123456789")
    assert user.account.name == "Shop Ltd" and user.account.is_b2b
    assert not user.is_staff
