"""Security checks on the running site: production headers and cookies, CSP, CSRF on every
form, and no key or secret plaintext in the logs over a key's whole life.

``manage.py check --deploy`` with production settings is tests/test_settings.py.
"""

from __future__ import annotations

import json
import logging
import os
import re
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest
from django.conf import settings
from django.db import connection
from django.test import Client, override_settings
from django.urls import URLPattern, URLResolver, get_resolver, reverse

from accounts.models import ApiKey
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db

ROOT = Path(__file__).resolve().parent.parent
PASSWORD = "correct horse battery staple 42"
PRODUCTION_SECURITY_SETTINGS = [
    "SECURE_HSTS_SECONDS",
    "SECURE_HSTS_INCLUDE_SUBDOMAINS",
    "SECURE_HSTS_PRELOAD",
    "SECURE_SSL_REDIRECT",
    "SECURE_PROXY_SSL_HEADER",
    "SESSION_COOKIE_SECURE",
    "SESSION_COOKIE_HTTPONLY",
    "CSRF_COOKIE_SECURE",
    "SECURE_CONTENT_TYPE_NOSNIFF",
    "X_FRAME_OPTIONS",
    "DEBUG",
]


def production_settings() -> dict:
    """The security settings reseller.settings.production really has, read in a subprocess."""
    env = {k: v for k, v in os.environ.items() if k not in {"DJANGO_SETTINGS_MODULE", "DEBUG"}} | {
        "DJANGO_SETTINGS_MODULE": "reseller.settings.production",
        "SECRET_KEY": "x7Hq2-very-long-random-production-secret-value-0123456789-abcdefghij",
        "SECURE_SSL_REDIRECT": "true",
    }
    code = (
        "import json, django; django.setup(); from django.conf import settings as s; "
        f"print(json.dumps({{n: getattr(s, n) for n in {PRODUCTION_SECURITY_SETTINGS!r}}}))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    values = json.loads(result.stdout.strip().splitlines()[-1])
    if values["SECURE_PROXY_SSL_HEADER"]:
        values["SECURE_PROXY_SSL_HEADER"] = tuple(values["SECURE_PROXY_SSL_HEADER"])
    return values


@pytest.fixture(scope="module")
def production():
    return production_settings()


def test_production_settings_force_https_hsts_and_secure_httponly_cookies(production):
    assert production["DEBUG"] is False
    assert production["SECURE_SSL_REDIRECT"] is True
    assert production["SECURE_HSTS_SECONDS"] >= 31536000
    assert production["SECURE_HSTS_INCLUDE_SUBDOMAINS"] is True
    assert production["SESSION_COOKIE_SECURE"] is True
    assert production["SESSION_COOKIE_HTTPONLY"] is True
    assert production["CSRF_COOKIE_SECURE"] is True


def test_production_responses_carry_hsts_csp_and_framing_headers(production):
    with override_settings(**{**production, "SECURE_SSL_REDIRECT": False}):
        response = Client().get("/", secure=True)
    assert response.status_code == 200
    hsts = response.headers["Strict-Transport-Security"]
    assert "max-age=31536000" in hsts and "includeSubDomains" in hsts
    csp = response.headers["Content-Security-Policy"]
    assert "default-src 'self'" in csp
    assert "frame-ancestors 'none'" in csp
    assert "object-src 'none'" in csp
    assert "'unsafe-eval'" not in csp
    assert response.headers["X-Frame-Options"] == "DENY"
    assert response.headers["X-Content-Type-Options"] == "nosniff"


def test_production_redirects_plain_http_to_https(production):
    with override_settings(**production):
        response = Client().get("/accounts/login/")
    assert response.status_code == 301
    assert response.headers["Location"].startswith("https://")


def test_production_login_sets_secure_httponly_session_and_secure_csrf_cookies(production):
    user = UserFactory(password=PASSWORD)
    with override_settings(**{**production, "SECURE_SSL_REDIRECT": False}):
        client = Client(enforce_csrf_checks=True)
        page = client.get("/accounts/login/", secure=True)
        csrf = page.cookies["csrftoken"]
        assert csrf["secure"]
        token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text).group(1)
        response = client.post(
            "/accounts/login/",
            {"username": user.email, "password": PASSWORD, "csrfmiddlewaretoken": token},
            secure=True,
            headers={"Referer": "https://testserver/accounts/login/"},
        )
    assert response.status_code == 302, response.content[:500]
    session = response.cookies[settings.SESSION_COOKIE_NAME]
    assert session["secure"] and session["httponly"]
    assert session["samesite"] == "Lax"


def test_every_site_page_has_a_content_security_policy(site_pages):
    for url, response in site_pages(logged_in=True):
        assert "Content-Security-Policy" in response.headers, url


# -- CSRF on every form --------------------------------------------------------------------


class FormParser(HTMLParser):
    """Collects each <form>: its method, its action and the names of its inputs."""

    def __init__(self):
        super().__init__()
        self.forms: list[dict] = []
        self._current: dict | None = None

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "form":
            self._current = {
                "method": (attrs.get("method") or "get").lower(),
                "action": attrs.get("action") or "",
                "inputs": [],
            }
            self.forms.append(self._current)
        elif tag in {"input", "button", "select", "textarea"} and self._current is not None:
            self._current["inputs"].append(attrs.get("name"))

    def handle_endtag(self, tag):
        if tag == "form":
            self._current = None


def _site_routes() -> list[tuple[str, str]]:
    """(namespaced url name, route) of every page of the site: not the API, admin, i18n."""
    found: list[tuple[str, str]] = []

    def walk(patterns, prefix: str, namespace: str) -> None:
        for pattern in patterns:
            route = prefix + str(pattern.pattern)
            if isinstance(pattern, URLResolver):
                ns = f"{namespace}{pattern.namespace}:" if pattern.namespace else namespace
                walk(pattern.url_patterns, route, ns)
            elif isinstance(pattern, URLPattern) and pattern.name:
                found.append((namespace + pattern.name, route))

    walk(get_resolver().url_patterns, "", "")
    skipped = ("api/", "admin/", "i18n/", "^static")
    return [(name, route) for name, route in found if not route.startswith(skipped)]


def _cart_item_and_payment(user, operator):
    """A cart item and a paid wallet order of the user, for the pages that show them."""
    from decimal import Decimal

    from django.db import transaction

    from orders.pricing import LineRequest
    from orders.services import cart_add_item, order_place_with_wallet
    from tests.factories import ProductFactory
    from wallet.services import wallet_get_or_create, wallet_topup_manual

    product = ProductFactory(operator=operator, retail_price=Decimal("5.00"))
    line = LineRequest(product=product, recipient_number="+525512345678", quantity=1)
    item = cart_add_item(account=user.account, livemode=True, session_id="default", line=line)
    wallet_topup_manual(account=user.account, amount=Decimal("10.00"))
    with transaction.atomic():
        order = order_place_with_wallet(
            account=user.account,
            wallet=wallet_get_or_create(account=user.account),
            livemode=True,
            channel="wallet",
            lines=[line],
            currency="EUR",
            user=user,
        )
    return item, order.payment


def _guest_receipt_token(product) -> str:
    """The receipt link of a guest's card payment (docs/site.md), pending: its page and status."""
    from accounts.services import guest_account
    from orders.pricing import LineRequest, price_order
    from orders.services import order_create
    from payments.receipts import receipt_token

    account = guest_account()
    line = LineRequest(product=product, recipient_number="+525512345678", quantity=1)
    _order, payment, _lines = order_create(
        account=account,
        livemode=True,
        channel="card",
        priced=price_order(account=account, lines=[line], currency="EUR"),
        user=None,
        api_key=None,
        payment_status="pending",
        method="card",
        wallet=None,
    )
    return receipt_token(payment.public_id)


@pytest.fixture
def site_pages(db):
    """Every site page rendered with GET: reverse() each named route, with arguments for
    the few that take them (a key of the user, a seeded country)."""
    from catalog import services as catalog_services

    user = UserFactory(password=PASSWORD)
    from accounts.services import api_key_create

    key, _plaintext = api_key_create(
        account=user.account, user=user, name="Shop", mode="test", ip_whitelist=[]
    )
    country, _ = catalog_services.country_upsert(
        code="MX", name="Mexico", calling_code="+52", currency="MXN"
    )
    operator, _ = catalog_services.operator_upsert(country=country, slug="telcel", name="Telcel")
    item, payment = _cart_item_and_payment(user, operator)
    from accounts.services import account_set_b2b
    from orders.batches import batch_place
    from orders.pricing import LineRequest

    account_set_b2b(account=user.account, is_b2b=True)  # the batch pages are for resellers
    product = payment.order.lines.get().product
    batch_id = batch_place(
        account=user.account,
        lines=[LineRequest(product=product, recipient_number="+525512345678", quantity=1)],
        references=["walk"],
        currency="EUR",
        user=user,
        idempotency_key=None,
    ).body["id"]
    from webhooks.services import endpoint_create, endpoint_send_test

    endpoint = endpoint_create(account=user.account, url="https://93.184.216.34/h", livemode=True)
    delivery = endpoint_send_test(endpoint=endpoint).deliveries.get()
    from requestlog.models import ApiRequest

    logged = ApiRequest.objects.create(
        account=user.account, api_key=key, livemode=False, method="GET", path="/api/v1/auth/me",
        status=200, latency_ms=3, request_id="req_walk", response_body='{"ok": true}',
    )  # fmt: skip
    from network.agents import agent_create

    agent = agent_create(parent=user.account, by=user, name="Kiosk", owner_email="k@example.com")
    arguments = {
        "network:agent-status": [agent.public_id],  # POST only: 405 to GET
        "network:agent-invite": [agent.public_id],  # POST only: 405 to GET
        "webhooks:endpoint": [endpoint.public_id],
        "webhooks:endpoint-rotate": [endpoint.public_id],
        "webhooks:endpoint-test": [endpoint.public_id],
        "webhooks:endpoint-delete": [endpoint.public_id],
        "webhooks:delivery-resend": [endpoint.public_id, delivery.public_id],
        "accounts:api-key": [key.public_id],
        "accounts:api-key-revoke": [key.public_id],
        "accounts:api-key-sandbox-topup": [key.public_id],
        "requestlog:api-key-requests": [key.public_id],
        "requestlog:api-key-request": [key.public_id, logged.public_id],
        "catalog:country": ["MX"],
        "catalog:operator": ["MX", "telcel"],
        "orders:cart-item-update": [item.public_id],
        "orders:cart-item-remove": [item.public_id],
        "orders:receipt": [payment.public_id],
        "orders:receipt-status": [payment.public_id],
        "orders:guest-receipt": [_guest_receipt_token(product)],
        "orders:guest-receipt-status": [_guest_receipt_token(product)],
        "accounts:password-reset-confirm": ["MQ", "not-a-token"],  # the expired-link page
        "accounts:signup-confirm": ["not-a-token"],
        "recipients:delete": ["rcp_unknown"],
        "accounts:member-role": [user.public_id],
        "accounts:member-remove": [user.public_id],
        "accounts:invitation": ["not-a-token"],
        "orders:batch": [batch_id],
        "orders:product-price": ["prd_none"],
        "orders:batch-status": [batch_id],
        "orders:batch-results": [batch_id],
        "accounts:email-confirm": ["not-a-token"],
        "recharges:provider-callback": ["dtone-main"],  # POST only: 405 to GET
    }

    def pages(*, logged_in: bool):
        client = Client()
        if logged_in:
            client.force_login(user)
        for name, route in _site_routes():
            url = reverse(name, args=arguments.get(name, []))
            response = client.get(url)
            if response.status_code == 405:  # POST-only (logout): its form is on other pages
                continue
            if name == "favicon":  # not a page: a permanent redirect to the static icon
                assert response.status_code == 301
                continue
            if name == "orders:product-price":  # not a page: a range product's price, JSON
                assert response.status_code == 404  # no such product (tests/test_range_site.py)
                assert response.headers["Content-Type"] == "application/json"
                continue
            assert response.status_code in {200, 302}, (url, response.status_code)
            yield url, response

    pages.routes = _site_routes
    return pages


def test_the_site_walk_reaches_every_form_page(site_pages):
    names = {name for name, _route in site_pages.routes()}
    assert {"accounts:login", "accounts:signup", "accounts:profile", "accounts:api-key-create",
            "accounts:api-key", "accounts:api-key-revoke", "accounts:password",
            "home"} <= names  # fmt: skip


def test_every_post_form_of_the_site_carries_a_csrf_token(site_pages):
    post_forms = 0
    for logged_in in (False, True):
        for url, response in site_pages(logged_in=logged_in):
            if response.status_code != 200 or "html" not in response.headers["Content-Type"]:
                continue
            parser = FormParser()
            parser.feed(response.content.decode())
            for form in parser.forms:
                if form["method"] == "post":
                    post_forms += 1
                    assert "csrfmiddlewaretoken" in form["inputs"], (url, form)
    assert post_forms >= 8


def test_every_post_form_is_refused_without_its_csrf_token(site_pages):
    """The forms' targets, posted without a token by a logged-in browser: 403 each time."""
    targets: set[str] = set()
    for url, response in site_pages(logged_in=True):
        if response.status_code != 200 or response.streaming:  # a download has no forms
            continue
        parser = FormParser()
        parser.feed(response.content.decode())
        targets |= {f["action"] or url for f in parser.forms if f["method"] == "post"}
    assert len(targets) >= 6, targets
    user = UserFactory(password=PASSWORD)
    client = Client(enforce_csrf_checks=True)
    client.force_login(user)
    for target in sorted(targets):
        response = client.post(target, {"name": "x"})
        assert response.status_code == 403, (target, response.status_code)


# -- secrets in logs -----------------------------------------------------------------------


def test_no_key_plaintext_or_secret_reaches_the_logs_over_a_keys_life(caplog):
    """Create a key on the dashboard, use it (good and bad), revoke it, try it again; every
    log record at DEBUG, SQL included, is searched for the plaintext and for its secret part."""
    user = UserFactory(password=PASSWORD)
    browser = Client()
    browser.force_login(user)
    caplog.set_level(logging.DEBUG)
    caplog.set_level(logging.DEBUG, logger="django")
    django_logger = logging.getLogger("django")  # does not propagate to the root handler
    django_logger.addHandler(caplog.handler)
    connection.force_debug_cursor = True  # log every SQL statement with its parameters
    try:
        form = browser.get("/accounts/keys/new/")
        token = re.search(r'name="form_token" value="([^"]+)"', form.text).group(1)
        created = browser.post(
            "/accounts/keys/new/",
            {"name": "Shop", "mode": "live", "ip_whitelist": "", "form_token": token},
        )
        assert created.status_code == 200
        key = ApiKey.objects.get(account=user.account)
        plaintext = re.search(r"rsl_live_[0-9A-Za-z]{32,}", created.text).group(0)

        api = Client()
        assert api.get("/api/v1/auth/me", headers={"x-api-key": plaintext}).status_code == 200
        assert (
            api.get("/api/v1/wallet/balance", headers={"x-api-key": plaintext}).status_code == 200
        )
        wrong = plaintext[:-8] + ("A" * 8)
        assert api.get("/api/v1/auth/me", headers={"x-api-key": wrong}).status_code == 401
        revoked = browser.post(f"/accounts/keys/{key.public_id}/revoke/")
        assert revoked.status_code == 302
        after = api.get("/api/v1/auth/me", headers={"x-api-key": plaintext})
        assert after.status_code == 401
        assert after.json()["code"] == "api_key_revoked"
        browser.get("/accounts/keys/")
    finally:
        connection.force_debug_cursor = False
        django_logger.removeHandler(caplog.handler)

    # The visible prefix (rsl_live_ + 8 characters) may be logged; nothing after it may.
    hidden = plaintext[len(key.prefix) :]
    hidden_wrong = wrong[len(key.prefix) :]
    assert any("SELECT" in r.getMessage() for r in caplog.records), "SQL was not logged"
    for record in caplog.records:
        text = record.getMessage() + (record.exc_text or "") + repr(getattr(record, "args", ""))
        assert hidden not in text, f"key plaintext in the log: {record.name}"
        assert hidden_wrong not in text, f"a refused key in the log: {record.name}"
        assert settings.SECRET_KEY not in text, f"SECRET_KEY in the log: {record.name}"
