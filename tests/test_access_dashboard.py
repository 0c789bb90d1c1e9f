"""The API key pages of the profile dashboard, and the Django admin of keys."""

import pytest
import redis
from django.conf import settings
from django.db import connection
from django.test import Client
from django.urls import reverse

from accounts import services
from accounts.models import ApiKey
from tests.factories import UserFactory, make_key
from tests.helpers import assert_problem, second_factor_login, sign_up

pytestmark = pytest.mark.django_db

KEYS = reverse("accounts:api-keys")
NEW = reverse("accounts:api-key-create")


def detail_url(key):
    return reverse("accounts:api-key", kwargs={"key_id": key.public_id})


def revoke_url(key):
    return reverse("accounts:api-key-revoke", kwargs={"key_id": key.public_id})


@pytest.fixture
def site(client, user):
    client.force_login(user)
    return client


def create(site, **data):
    token = site.get(NEW).context["form"].initial["form_token"]
    payload = {"name": "Shop", "mode": "test", "ip_whitelist": "", "form_token": token, **data}
    return site.post(NEW, payload), payload


def test_profile_page_links_to_the_api_keys(site):
    assert KEYS.encode() in site.get(reverse("accounts:profile")).content


def test_key_pages_need_a_logged_in_user(client, user):
    key, _ = make_key(user)
    for url in [KEYS, NEW, detail_url(key), revoke_url(key)]:
        response = client.get(url)
        assert response.status_code == 302 and reverse("accounts:login") in response["Location"]


def test_create_shows_the_key_once_and_a_second_view_does_not(site, user):
    response, payload = create(site, name="Staging", mode="test")
    assert response.status_code == 200
    plaintext = response.context["plaintext"]
    page = response.content.decode()
    assert plaintext.startswith("rsl_test_") and plaintext in page
    assert "shown only this once" in page
    assert 'data-copy-target="api-key-value"' in page and "js/copy.js" in page
    assert "no-store" in response["Cache-Control"]
    key = ApiKey.objects.get()
    assert (key.name, key.mode, key.account, key.user) == ("Staging", "test", user.account, user)
    for url in [KEYS, detail_url(key), revoke_url(key)]:
        page = site.get(url).content.decode()
        assert key.prefix in page and plaintext not in page and plaintext[-20:] not in page
    # reloading the result page re-sends the form: no second key, and the key is not shown
    again = site.post(NEW, payload, follow=True)
    assert plaintext not in again.content.decode()
    assert "already sent" in again.content.decode()
    assert ApiKey.objects.count() == 1


def test_plaintext_created_on_the_dashboard_is_in_no_table_and_not_in_redis(site):
    response, _ = create(site)
    secret = response.context["plaintext"][len("rsl_test_") + 8 :]
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = 'public'"
        )
        tables = [row[0] for row in cursor.fetchall()]
        assert "accounts_apikey" in tables and "django_session" in tables
        for table in tables:
            query = f'SELECT count(*) FROM "{table}" t WHERE row_to_json(t)::text LIKE %s'
            cursor.execute(query, [f"%{secret}%"])
            assert cursor.fetchone()[0] == 0, table
    store = redis.Redis.from_url(settings.REDIS_URL)
    for name in store.scan_iter("*"):
        if store.type(name) == b"string":
            assert secret.encode() not in store.get(name), name


def test_create_live_key_with_whitelist(site):
    response, _ = create(site, mode="live", ip_whitelist="203.0.113.7\n2001:DB8::1, 203.0.113.7")
    assert response.context["plaintext"].startswith("rsl_live_")
    assert ApiKey.objects.get().ip_whitelist == ["203.0.113.7", "2001:db8::1"]


def test_create_with_a_bad_address_shows_the_error_and_creates_nothing(site):
    response, _ = create(site, ip_whitelist="10.0.0.0/8")
    assert response.status_code == 200
    assert "10.0.0.0/8" in response.content.decode() and "plaintext" not in response.context
    assert not ApiKey.objects.exists()


def test_list_shows_name_mode_prefix_whitelist_dates_and_status(site, user):
    active, _ = make_key(user, name="Live shop", mode="live", ip_whitelist=["203.0.113.7"])
    revoked, _ = make_key(user, name="Old test", mode="test")
    services.api_key_revoke(key=revoked, by=user)
    page = site.get(KEYS).content.decode()
    for text in ["Live shop", "Old test", active.prefix, revoked.prefix, "203.0.113.7"]:
        assert text in page
    assert "Any address" in page and "Never" in page and "revoked" in page
    assert revoke_url(active) in page and revoke_url(revoked) not in page


def test_keys_of_other_accounts_are_invisible_and_404(site, user):
    theirs, _ = make_key(UserFactory(), name="Their key")
    assert "Their key" not in site.get(KEYS).content.decode()
    assert site.get(detail_url(theirs)).status_code == 404
    assert site.get(revoke_url(theirs)).status_code == 404
    assert site.post(revoke_url(theirs)).status_code == 404
    assert site.post(detail_url(theirs), {"ip_whitelist": "1.2.3.4"}).status_code == 404
    theirs.refresh_from_db()
    assert theirs.is_active and theirs.ip_whitelist == []


def test_edit_whitelist_saves_normalised_addresses_or_shows_errors(site, user, api):
    key, plaintext = make_key(user)
    response = site.post(detail_url(key), {"ip_whitelist": "2001:db8:0::7\n198.51.100.4"})
    assert response.status_code == 302
    key.refresh_from_db()
    assert key.ip_whitelist == ["2001:db8::7", "198.51.100.4"]
    assert_problem(api.get("/api/v1/auth/me", HTTP_X_API_KEY=plaintext), 403, "ip_not_allowed")
    response = site.post(detail_url(key), {"ip_whitelist": "not-an-address"})
    assert response.status_code == 200 and "not-an-address" in response.content.decode()
    key.refresh_from_db()
    assert key.ip_whitelist == ["2001:db8::7", "198.51.100.4"]
    site.post(detail_url(key), {"ip_whitelist": ""})
    key.refresh_from_db()
    assert key.ip_whitelist == []


def test_revoke_asks_for_confirmation_then_the_key_stops_working(site, user, api):
    key, plaintext = make_key(user)
    page = site.get(revoke_url(key)).content.decode()
    assert "Yes, revoke this key" in page
    key.refresh_from_db()
    assert key.is_active  # looking at the confirmation page changes nothing
    response = site.post(revoke_url(key))
    assert response.status_code == 302 and response["Location"] == KEYS
    key.refresh_from_db()
    assert key.revoked_at is not None and key.revoked_by == user
    assert_problem(api.get("/api/v1/auth/me", HTTP_X_API_KEY=plaintext), 401, "api_key_revoked")
    page = site.get(detail_url(key)).content.decode()
    assert "cannot be used or changed again" in page
    site.post(detail_url(key), {"ip_whitelist": "1.2.3.4"})
    key.refresh_from_db()
    assert key.ip_whitelist == []


def test_key_forms_require_the_csrf_token(user):
    client = Client(enforce_csrf_checks=True)
    client.force_login(user)
    key, _ = make_key(user)
    token = client.get(NEW).context["form"].initial["form_token"]
    data = {"name": "x", "mode": "test", "ip_whitelist": "", "form_token": token}
    assert client.post(NEW, data).status_code == 403
    assert client.post(revoke_url(key)).status_code == 403
    assert client.post(detail_url(key), {"ip_whitelist": "1.2.3.4"}).status_code == 403
    key.refresh_from_db()
    assert ApiKey.objects.count() == 1 and key.is_active and key.ip_whitelist == []


def test_newcomer_signs_up_creates_a_test_key_and_calls_me_with_it(client, api):
    sign_up(client, "new@example.com")
    response, _ = create(client, name="My first key")
    plaintext = response.context["plaintext"]
    assert f'curl -H "x-api-key: {plaintext}"' in response.content.decode()
    body = api.get("/api/v1/auth/me", HTTP_X_API_KEY=plaintext).json()
    assert body["user"]["email"] == "new@example.com"
    assert body["apiKey"]["name"] == "My first key" and body["apiKey"]["mode"] == "test"


# Django admin ----------------------------------------------------------------------------------


@pytest.fixture
def admin_client(client):
    second_factor_login(client, UserFactory(is_staff=True, is_superuser=True))
    return client


def test_staff_see_keys_in_the_admin_without_hash_or_plaintext(admin_client, user):
    key, plaintext = make_key(user, name="Visible")
    for url in [
        "/admin/accounts/apikey/",
        f"/admin/accounts/apikey/{key.pk}/change/",
    ]:
        response = admin_client.get(url)
        page = response.content.decode()
        assert response.status_code == 200 and key.prefix in page
        assert key.secret_hash not in page and plaintext[len(key.prefix) :] not in page
    assert admin_client.get("/admin/accounts/apikey/add/").status_code == 403


def test_staff_revoke_keys_with_the_admin_action(admin_client, user, api):
    key, plaintext = make_key(user)
    response = admin_client.post(
        "/admin/accounts/apikey/",
        {"action": "revoke_keys", "_selected_action": [key.pk]},
        follow=True,
    )
    assert "1 key revoked." in response.content.decode()
    key.refresh_from_db()
    assert key.revoked_at is not None
    assert_problem(api.get("/api/v1/auth/me", HTTP_X_API_KEY=plaintext), 401, "api_key_revoked")


def test_staff_set_a_per_key_rate_limit_in_the_admin(admin_client, user):
    key, _ = make_key(user)
    response = admin_client.post(
        f"/admin/accounts/apikey/{key.pk}/change/",
        {"rate_limit_per_minute": "30", "max_units_per_request": ""},
    )
    assert response.status_code == 302
    key.refresh_from_db()
    assert key.rate_limit_per_minute == 30 and key.max_units_per_request is None
