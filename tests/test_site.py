"""The server-rendered site: sign-up, login, logout, profile, languages, CSRF."""

import pytest
from django.conf import settings
from django.test import Client
from django.urls import reverse

from accounts.models import BillingProfile, User
from tests.factories import PASSWORD
from tests.helpers import second_factor_login, sign_up

pytestmark = pytest.mark.django_db


def test_home_page_renders_with_sign_up_link(client):
    response = client.get("/")
    assert response.status_code == 200
    assert reverse("accounts:signup").encode() in response.content
    assert b'name="viewport"' in response.content


def test_sign_up_confirms_the_email_then_creates_user_and_account_and_logs_in(client):
    sign_up(
        client,
        "New@Example.com",
        first_name="Nia",
        last_name="Obi",
        account_name="Nia Shop",
    )
    user = User.objects.get(email="new@example.com")
    assert user.account.name == "Nia Shop" and user.first_name == "Nia"
    assert user.account.billing is not None
    assert user.check_password("a-long-passphrase-42")
    profile = client.get(reverse("accounts:profile"))
    assert profile.status_code == 200
    assert b"new@example.com" in profile.content


def test_sign_up_refuses_a_weak_password(client):
    response = client.post(
        reverse("accounts:signup"),
        {"email": "new@example.com", "password1": "123", "password2": "123"},
    )
    assert response.status_code == 200
    assert b"error" in response.content
    assert not User.objects.exists()


def test_login_with_email_then_logout(client, user):
    response = client.post(
        reverse("accounts:login"), {"username": user.email, "password": PASSWORD}
    )
    assert response.status_code == 302
    assert client.get(reverse("accounts:profile")).status_code == 200
    client.post(reverse("accounts:logout"))
    response = client.get(reverse("accounts:profile"))
    assert response.status_code == 302
    assert reverse("accounts:login") in response["Location"]


def test_login_page_with_wrong_password_shows_an_error(client, user):
    response = client.post(reverse("accounts:login"), {"username": user.email, "password": "x"})
    assert response.status_code == 200
    assert b"error" in response.content


def test_profile_edit_saves_profile_and_billing(client, user):
    client.force_login(user)
    response = client.post(
        reverse("accounts:profile"),
        {
            "profile-first_name": "Lea",
            "profile-last_name": "Roy",
            "profile-phone": "+33612345678",
            "profile-language": "fr",
            "account-account_name": "Roy SARL",
            "billing-company_name": "Roy SARL",
            "billing-vat_number": "FR123",
            "billing-address_line1": "1 rue de Paris",
            "billing-address_line2": "",
            "billing-city": "Paris",
            "billing-postal_code": "75001",
            "billing-country": "FR",
        },
    )
    assert response.status_code == 302
    user.refresh_from_db()
    assert (user.first_name, user.language, user.account.name) == ("Lea", "fr", "Roy SARL")
    assert user.account.billing.country == "FR"
    assert response.cookies["django_language"].value == "fr"


def test_the_billing_country_is_picked_from_the_list_in_the_users_language(client, user):
    client.force_login(user)
    page = client.get(reverse("accounts:profile"), HTTP_ACCEPT_LANGUAGE="es").content.decode()
    assert '<select name="billing-country"' in page
    assert '<option value="ES">España</option>' in page
    response = client.post(
        reverse("accounts:profile"),
        {"account-account_name": "Shop", "billing-country": "SP", "profile-language": "en"},
    )
    assert response.status_code == 200  # the form again, with the error
    assert not BillingProfile.objects.filter(account=user.account, country="SP").exists()


def test_profile_edit_with_bad_phone_changes_nothing(client, user):
    client.force_login(user)
    response = client.post(
        reverse("accounts:profile"),
        {
            "profile-first_name": "Changed",
            "profile-phone": "not-a-phone",
            "profile-language": "en",
            "account-account_name": "X",
        },
    )
    assert response.status_code == 200
    user.refresh_from_db()
    assert user.first_name == "Test"


@pytest.mark.parametrize("language, text", [("es", "Iniciar sesión"), ("fr", "Se connecter")])
def test_site_speaks_the_accept_language(client, language, text):
    response = client.get("/", HTTP_ACCEPT_LANGUAGE=language)
    assert response["Content-Language"] == language
    assert text in response.content.decode()


def test_language_switcher_sets_the_site_language(client):
    client.post("/i18n/setlang/", {"language": "es", "next": "/"})
    assert "Iniciar sesión" in client.get("/").content.decode()


def test_the_language_picked_before_logging_in_is_kept_and_saved_to_the_profile(client, user):
    assert user.language == "en"
    client.post("/i18n/setlang/", {"language": "es", "next": "/"})
    response = client.post(
        reverse("accounts:login"), {"username": user.email, "password": PASSWORD}
    )
    assert response.status_code == 302
    assert response.cookies[settings.LANGUAGE_COOKIE_NAME].value == "es"
    user.refresh_from_db()
    assert user.language == "es"
    assert "Cerrar sesión" in client.get("/").content.decode()


def test_without_a_pick_the_profiles_language_is_the_sites_at_login(client, user):
    user.language = "fr"
    user.save(update_fields=["language"])
    response = client.post(
        reverse("accounts:login"), {"username": user.email, "password": PASSWORD}
    )
    assert response.cookies[settings.LANGUAGE_COOKIE_NAME].value == "fr"


def test_switching_language_while_logged_in_updates_the_profile(client, user):
    client.force_login(user)
    response = client.post("/i18n/setlang/", {"language": "fr", "next": "/"})
    assert response.status_code == 302
    user.refresh_from_db()
    assert user.language == "fr"
    client.post("/i18n/setlang/", {"language": "xx", "next": "/"})  # not a site language
    user.refresh_from_db()
    assert user.language == "fr"


def test_site_forms_require_csrf_token(user):
    client = Client(enforce_csrf_checks=True)
    response = client.post(
        reverse("accounts:login"), {"username": user.email, "password": PASSWORD}
    )
    assert response.status_code == 403


def test_session_authenticated_api_write_requires_csrf(user):
    client = Client(enforce_csrf_checks=True)
    client.force_login(user)
    assert client.get("/api/v1/auth/me").status_code == 200
    response = client.patch(
        "/api/v1/auth/me", {"user": {"firstName": "X"}}, content_type="application/json"
    )
    assert response.status_code == 403
    assert response["Content-Type"].startswith("application/problem+json")


def test_api_docs_and_schema_render(client):
    assert client.get("/api/v1/docs/").status_code == 200
    schema = client.get("/api/v1/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json")
    assert schema.status_code == 200
    paths = schema.json()["paths"]
    assert "/api/v1/auth/login" in paths and "/api/v1/auth/me" in paths


def test_security_headers_on_pages(client):
    response = client.get("/")
    assert "default-src 'self'" in response["Content-Security-Policy"]
    assert response["X-Frame-Options"] == "DENY"
    assert response["X-Content-Type-Options"] == "nosniff"


def test_admin_lists_users_and_accounts_for_staff(client, staff):
    second_factor_login(client, staff)
    assert client.get("/admin/accounts/user/").status_code == 200
    assert client.get("/admin/accounts/account/").status_code == 200


def test_a_logged_out_add_to_cart_comes_back_to_the_page_with_its_plus_sign(client, product):
    """Issue 17, defect 2: the "+" of the number in the page's address became a space."""
    from tests.factories import PASSWORD, UserFactory

    page = "/catalog/MX/telcel/?phone=%2B525512345678"
    response = client.post(
        "/cart/add/",
        {"product": product.public_id, "recipient_number": "+525512345678", "next": page},
    )
    assert response.status_code == 302
    login_url = response["Location"]
    user = UserFactory()
    back = client.post(login_url, {"username": user.email, "password": PASSWORD})
    assert back.status_code == 302
    assert back["Location"] == page


def test_a_visitor_reading_in_spanish_stays_spanish_after_login_and_so_does_the_email(
    client, user, django_capture_on_commit_callbacks
):
    """Issue 32, defect 4: a visitor whose browser asks for Spanish (no pick on the site)
    was switched to the profile's English at login; the receipt email said lang="en" and
    1.57 EUR. The language in use at login wins, is saved, and email follows it."""
    from decimal import Decimal

    from emails.models import Email
    from emails.services import render
    from orders.pricing import LineRequest
    from orders.services import order_place_with_wallet
    from tests.factories import ProductFactory
    from wallet.services import wallet_get_or_create, wallet_topup_manual

    assert user.language == "en"
    response = client.post(
        reverse("accounts:login"),
        {"username": user.email, "password": PASSWORD},
        HTTP_ACCEPT_LANGUAGE="es-MX,es;q=0.9",
    )
    assert response.status_code == 302
    assert response.cookies[settings.LANGUAGE_COOKIE_NAME].value == "es"
    user.refresh_from_db()
    assert user.language == "es"
    product = ProductFactory(retail_price=Decimal("1.57"))
    wallet_topup_manual(account=user.account, amount=Decimal("10.00"))
    order_place_with_wallet(
        account=user.account,
        wallet=wallet_get_or_create(account=user.account),
        livemode=True,
        channel="wallet",
        currency="EUR",
        user=user,
        lines=[LineRequest(product=product, recipient_number="+525512345678", quantity=1)],
    )
    receipt = render(Email.objects.get(kind="receipt"))
    html = receipt.alternatives[0][0]
    assert 'lang="es"' in html and "1,57 EUR" in html and "1.57" not in html
    assert "1,57 EUR" in receipt.body
