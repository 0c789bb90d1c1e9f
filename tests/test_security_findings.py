"""The holes an attacker found (docs/security.md, "Findings"): each test failed before its fix."""

from __future__ import annotations

import json
from decimal import Decimal

import pytest
from django.test import Client

from orders.models import Order
from tests.factories import UserFactory, make_key
from tests.helpers import (
    assert_ledger_balanced,
    assert_problem,
    bearer,
    client_for,
    other_session,
    second_factor_login,
)
from wallet.services import wallet_topup_manual

pytestmark = pytest.mark.django_db

B2B = "/api/v1/api-access/b2b/recharges"
NUMBER = "+525512345678"


@pytest.fixture
def shop(reseller):
    wallet_topup_manual(account=reseller.account, amount=Decimal("100.00"))
    _key, plaintext = make_key(reseller, mode="live")
    return client_for(plaintext)


@pytest.mark.parametrize("quantity", ["1", " 1", 1.0, True])
def test_quantity_must_be_a_json_integer_and_nothing_is_charged(shop, product, quantity):
    body = {
        "items": [
            {"productId": product.public_id, "recipientNumber": NUMBER, "quantity": quantity}
        ],
        "baseCurrency": "EUR",
    }
    response = shop.post(
        B2B,
        body,
        format="json",
        HTTP_IDEMPOTENCY_KEY=f"q-{type(quantity).__name__}-{str(quantity).strip()}",
    )
    problem = assert_problem(response, 400, "validation_error")
    assert [e["field"] for e in problem["errors"]] == ["items[0].quantity"]
    assert Order.objects.count() == 0
    assert_ledger_balanced()


def test_every_billing_field_get_shows_can_be_patched(user_api):
    billing = user_api.get("/api/v1/auth/me").json()["billing"]
    change = {name: f"new {name}"[:20] for name in billing if name != "country"}
    response = user_api.patch("/api/v1/auth/me", {"billing": change}, format="json")
    assert response.status_code == 200, response.content
    shown = response.json()["billing"]
    assert {name: shown[name] for name in change} == change


def _nested(depth: int) -> str:
    return "[" * depth + "]" * depth


@pytest.mark.parametrize(
    "path", ["/api/v1/wallet/checkout", "/api/v1/cart/items", "/api/v1/auth/me"]
)
def test_json_nested_beyond_the_limit_is_400_invalid_json(user_api, path):
    body = '{"items": ' + _nested(5000) + "}"
    method = user_api.patch if path.endswith("/me") else user_api.post
    response = method(path, body, content_type="application/json")
    assert_problem(response, 400, "invalid_json")


def test_a_body_over_the_limit_is_413_request_too_large(user_api, settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1000
    body = json.dumps({"sessionId": "x" * 5000})
    response = user_api.post("/api/v1/cart/items", body, content_type="application/json")
    assert_problem(response, 413, "request_too_large")


@pytest.mark.parametrize(
    "path",
    [
        "/api/v1/cart/items/%00",
        "/api/v1/catalog/recharge-products/%00",
        "/api/v1/cart/items/" + "a" * 5000,
    ],
)
def test_nul_bytes_and_overlong_ids_in_api_paths_are_404(user_api, path):
    response = user_api.delete(path) if "cart" in path else user_api.get(path)
    assert_problem(response, 404, "not_found")


@pytest.mark.parametrize(
    "path",
    ["/payments/%00/", "/accounts/keys/%00/", "/cart/items/%00/", "/payments/%00/status.json"],
)
def test_nul_bytes_in_site_paths_are_404(path):
    client = Client()
    client.force_login(UserFactory())
    assert client.get(path).status_code == 404


@pytest.mark.parametrize("amount", ["sNaN", "1e100", "1" * 29, "NaN", "-Infinity", "1e-400"])
def test_junk_numbers_in_site_money_forms_are_form_errors(amount):
    client = Client()
    client.force_login(UserFactory())
    response = client.post("/wallet/bank-transfer/", {"amount": amount})
    assert response.status_code in (200, 302)


def test_a_test_key_cannot_rewrite_the_live_profile(user):
    _key, plaintext = make_key(user, mode="test")
    response = client_for(plaintext).patch(
        "/api/v1/auth/me", {"account": {"name": "Hijacked"}}, format="json"
    )
    assert_problem(response, 403, "permission_denied")
    user.account.refresh_from_db()
    assert user.account.name != "Hijacked"


def test_a_staff_test_key_reads_no_live_back_office_data(staff, reseller, product, shop):
    _key, plaintext = make_key(staff, mode="test")
    client = client_for(plaintext)
    for path in ("payments", "users?q=a", "recharges?mode=live", "summary", "products"):
        response = client.get(f"/api/v1/admin/{path}")
        assert_problem(response, 403, "permission_denied")


def test_staff_jwt_still_reads_the_back_office(staff, api):
    api.credentials(**bearer(staff))
    assert api.get("/api/v1/admin/summary").status_code == 200


@pytest.mark.parametrize("amount", ["sNaN", "1e100", "1" * 29, "NaN"])
def test_junk_numbers_in_the_sandbox_top_up_are_400(user, amount):
    from reseller.errors import ValidationFailed
    from sandbox.balances import parse_amount

    with pytest.raises(ValidationFailed):
        parse_amount(amount)


@pytest.mark.django_db(transaction=True)
def test_concurrent_refreshes_with_one_token_rotate_it_exactly_once():
    import threading

    from django.db import connection
    from rest_framework.test import APIClient
    from rest_framework_simplejwt.tokens import RefreshToken

    refresh = str(RefreshToken.for_user(UserFactory()))
    barrier = threading.Barrier(8)
    statuses: list[int] = []

    def attempt():
        try:
            barrier.wait()
            response = APIClient().post("/api/v1/auth/refresh", {"refresh": refresh}, format="json")
            statuses.append(response.status_code)
        finally:
            connection.close()

    threads = [threading.Thread(target=attempt) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert sorted(statuses) == [200] + [401] * 7


def test_the_admin_login_is_limited_like_the_site_login(staff, settings):
    from tests.factories import PASSWORD

    settings.LOGIN_RATE_WINDOW_SECONDS = 365 * 24 * 3600  # no window ends during the test
    client = Client()
    refused = [
        client.post("/admin/login/", {"username": staff.email, "password": "wrong"})
        for _attempt in range(settings.LOGIN_RATE_PER_EMAIL)
    ]
    assert all(r.status_code == 200 for r in refused)  # the form again, with its error
    right = client.post(
        "/admin/login/?next=/admin/", {"username": staff.email, "password": PASSWORD}
    )
    assert right.status_code == 200  # still the form: this email is out of attempts
    assert "Too many login attempts" in right.content.decode()
    assert "_auth_user_id" not in client.session


def test_staff_cannot_credit_a_card_top_up_that_was_never_paid(user, staff):
    from django.db import IntegrityError, transaction

    from backoffice.services import staff_topup_approve
    from reseller.errors import ApplicationError
    from wallet.models import TopUp, Wallet
    from wallet.services import topup_request

    topup = topup_request(account=user.account, amount=Decimal("5000.00"), method="card", by=user)
    with pytest.raises(ApplicationError) as refused:
        staff_topup_approve(topup=topup, actor=staff)
    assert refused.value.code == "topup_not_approvable"
    topup.refresh_from_db()
    assert topup.status == "pending"
    assert Wallet.objects.get(account=user.account, kind="live").balance == Decimal("0.00")
    with pytest.raises(IntegrityError), transaction.atomic():  # nor by writing the row
        TopUp.objects.filter(pk=topup.pk).update(status="approved")
    assert_ledger_balanced()


def test_the_admin_action_leaves_an_unpaid_card_top_up_pending(user, staff):
    from wallet.models import TopUp
    from wallet.services import topup_request

    topup = topup_request(account=user.account, amount=Decimal("50.00"), method="card", by=user)
    client = Client()
    second_factor_login(client, staff)
    client.post(
        "/admin/wallet/topup/",
        {"action": "approve", "_selected_action": [topup.pk]},
    )
    assert TopUp.objects.get(pk=topup.pk).status == "pending"
    assert_ledger_balanced()


@pytest.mark.django_db(transaction=True)
def test_a_request_that_died_leaves_its_key_free_at_once_and_a_live_one_is_409(product):
    """After a 503 (the request's database session died mid-order), a retry with the same
    Idempotency-Key runs at once: the key was taken in the order's transaction, which died
    with the session. A request still running holds its key: 409."""
    from accounts.services import account_set_b2b
    from orders.idempotency import lock_id

    user = UserFactory()
    account_set_b2b(account=user.account, is_b2b=True)
    wallet_topup_manual(account=user.account, amount=Decimal("50.00"))
    _key, plaintext = make_key(user, mode="live")
    line = {"productId": product.public_id, "recipientNumber": NUMBER, "quantity": 1}
    wire = {"items": [line], "baseCurrency": "EUR"}

    def hold(session, key: str) -> None:
        lock = lock_id(account_id=user.account.pk, livemode=True, key=key)
        session.execute("SELECT pg_advisory_lock(%s)", [lock])

    with other_session() as alive:
        hold(alive, "claim-alive")
        busy = client_for(plaintext).post(
            B2B, wire, format="json", HTTP_IDEMPOTENCY_KEY="claim-alive"
        )
        assert_problem(busy, 409, "idempotency_key_in_use")

    with other_session() as dying:
        hold(dying, "claim-dead")
    # the request's session is gone, and its key with it
    retried = client_for(plaintext).post(
        B2B, wire, format="json", HTTP_IDEMPOTENCY_KEY="claim-dead"
    )
    assert retried.status_code == 201, retried.content
    assert Order.objects.count() == 1
    assert_ledger_balanced()


def test_gunicorn_reads_its_request_limits_from_the_environment(monkeypatch):
    import runpy

    from django.conf import settings

    monkeypatch.setenv("GUNICORN_LIMIT_REQUEST_LINE", "2048")
    config = runpy.run_path(str(settings.BASE_DIR / "gunicorn.conf.py"))
    assert config["limit_request_line"] == 2048
    assert config["limit_request_fields"] == 100
    assert config["limit_request_field_size"] == 8190
