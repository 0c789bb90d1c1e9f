"""The Django admin as the staff's tool: actions call services, move money correctly and are
recorded in the audit trail; money and history are never edited by hand."""

from __future__ import annotations

import csv
import io
from decimal import Decimal

import pytest
from django.apps import apps
from django.contrib import admin
from django.contrib.admin.helpers import ACTION_CHECKBOX_NAME
from django.test import Client

from accounts.models import Account
from backoffice.models import StaffAction
from payments.models import Payment
from tests.factories import UserFactory, make_key
from tests.helpers import REJECTS, assert_ledger_balanced, fund, place, process, second_factor_login
from wallet.models import LedgerEntry, TopUp, Wallet
from wallet.services import topup_request
from webhooks.models import Delivery, DeliveryAttempt
from webhooks.services import endpoint_create

pytestmark = pytest.mark.django_db


@pytest.fixture
def client(staff) -> Client:
    client = Client()
    second_factor_login(client, staff)
    return client


@pytest.fixture
def shop():
    user = UserFactory()
    fund(user, "100.00")
    return user


@pytest.fixture
def product():
    from tests.factories import ProductFactory

    return ProductFactory(retail_price=Decimal("5.00"))


def act(client, url, action, objects, **data):
    return client.post(
        url, {"action": action, ACTION_CHECKBOX_NAME: [o.pk for o in objects], **data}
    )


def balance(user) -> Decimal:
    return Wallet.objects.get(account=user.account, kind="live").balance


def audit_trail(action):
    return list(StaffAction.objects.filter(action=action).order_by("id"))


# -- registrations --------------------------------------------------------------------------------


def test_every_model_of_our_apps_is_in_the_admin():
    ours = ("accounts", "catalog", "orders", "wallet", "backoffice", "webhooks", "emails")
    ours += ("recipients",)
    missing = [
        model._meta.label
        for app in ours
        for model in apps.get_app_config(app).get_models()
        if not admin.site.is_registered(model)
        and model._meta.label
        not in {  # shown inline
            "accounts.BillingProfile",
            "orders.OrderLine",
            "orders.CartItem",
            "webhooks.DeliveryAttempt",
        }
    ]
    assert missing == []


def test_every_changelist_and_change_page_renders_with_data(client, shop, product, staff, settings):
    settings.WEBHOOK_ALLOW_PRIVATE_TARGETS = True
    endpoint = endpoint_create(account=shop.account, url="http://127.0.0.1:9/hooks", livemode=True)
    order = place(shop, product, quantity=2)
    process(order)
    make_key(shop, mode="live")
    topup_request(account=shop.account, amount=Decimal("10"), method=TopUp.Method.BANK_TRANSFER)
    from backoffice.services import audit

    audit(actor=staff, action="test.action", target=shop.account, detail={"x": 1})
    delivery = Delivery.objects.filter(endpoint=endpoint).first()
    assert delivery is not None  # the top-up's wallet.credited event
    DeliveryAttempt.objects.create(delivery=delivery, number=1, status_code=500, latency_ms=12)
    for model, model_admin in admin.site._registry.items():
        opts = model._meta
        url = f"/admin/{opts.app_label}/{opts.model_name}/"
        response = client.get(url)
        assert response.status_code == 200, url
        obj = model_admin.get_queryset(response.wsgi_request).first()
        if obj is not None:
            response = client.get(f"{url}{obj.pk}/change/")
            assert response.status_code == 200, f"{url}{obj.pk}/change/"


def test_money_and_history_cannot_be_edited_or_deleted_by_hand(client, shop, product):
    order = place(shop, product)
    entry = LedgerEntry.objects.first()
    recharge = order.recharges.get()
    for url in (
        f"/admin/wallet/ledgerentry/{entry.pk}/change/",
        f"/admin/recharges/recharge/{recharge.pk}/change/",
        f"/admin/payments/payment/{order.payment.pk}/change/",
    ):
        assert client.post(url, {"amount": "999.00", "status": "delivered"}).status_code == 403
    assert client.post(f"/admin/wallet/ledgerentry/{entry.pk}/delete/").status_code == 403
    assert client.get("/admin/wallet/ledgerentry/add/").status_code == 403
    assert LedgerEntry.objects.get(pk=entry.pk).amount == Decimal("-5.00")
    page = client.get(f"/admin/wallet/ledgerentry/{entry.pk}/change/").content.decode()
    assert 'name="amount"' not in page


# -- wallet ---------------------------------------------------------------------------------------


def test_approving_a_bank_top_up_credits_the_wallet_once_and_is_audited(client, shop, staff):
    topup = topup_request(
        account=shop.account, amount=Decimal("50.00"), method=TopUp.Method.BANK_TRANSFER
    )
    for _ in range(2):
        response = act(client, "/admin/wallet/topup/", "approve", [topup])
        assert response.status_code == 302
    topup.refresh_from_db()
    assert topup.status == "approved" and topup.decided_by == staff
    assert balance(shop) == Decimal("150.00")
    (record,) = audit_trail("topup.approve")
    assert record.actor == staff and record.target_id == topup.public_id
    assert record.detail == {"amount": "50.00", "currency": "EUR"}
    assert_ledger_balanced()


def test_rejecting_a_bank_top_up_asks_for_a_note_and_credits_nothing(client, shop, staff):
    topup = topup_request(
        account=shop.account, amount=Decimal("50.00"), method=TopUp.Method.BANK_TRANSFER
    )
    form = act(client, "/admin/wallet/topup/", "reject", [topup])
    assert form.status_code == 200 and b'name="note"' in form.content
    topup.refresh_from_db()
    assert topup.status == "pending"
    response = act(client, "/admin/wallet/topup/", "reject", [topup], apply="1", note="no funds")
    assert response.status_code == 302
    topup.refresh_from_db()
    assert topup.status == "rejected" and topup.note == "no funds"
    assert balance(shop) == Decimal("100.00")
    assert audit_trail("topup.reject")[0].detail["note"] == "no funds"
    assert_ledger_balanced()


def test_an_empty_reject_note_shows_the_form_again(client, shop):
    topup = topup_request(
        account=shop.account, amount=Decimal("5.00"), method=TopUp.Method.BANK_TRANSFER
    )
    response = act(client, "/admin/wallet/topup/", "reject", [topup], apply="1", note="")
    assert response.status_code == 200 and b"errorlist" in response.content
    topup.refresh_from_db()
    assert topup.status == "pending" and not audit_trail("topup.reject")


def test_adjusting_a_wallet_adds_an_entry_and_never_edits_one(client, shop, staff):
    wallet = Wallet.objects.get(account=shop.account, kind="live")
    entries = LedgerEntry.objects.count()
    response = act(
        client,
        "/admin/wallet/wallet/",
        "adjust",
        [wallet],
        apply="1",
        amount="-12.50",
        reason="duplicate transfer",
    )
    assert response.status_code == 302
    assert balance(shop) == Decimal("87.50")
    entry = LedgerEntry.objects.order_by("-id").first()
    assert LedgerEntry.objects.count() == entries + 1
    assert entry.kind == "adjustment" and entry.amount == Decimal("-12.50")
    assert entry.created_by == staff and entry.memo == "duplicate transfer"
    record = audit_trail("wallet.adjust")[0]
    assert record.detail["entry"] == entry.public_id and record.detail["amount"] == "-12.50"
    assert_ledger_balanced()


def test_an_adjustment_below_zero_is_refused_and_not_recorded(client, shop):
    wallet = Wallet.objects.get(account=shop.account, kind="live")
    act(
        client,
        "/admin/wallet/wallet/",
        "adjust",
        [wallet],
        apply="1",
        amount="-500.00",
        reason="typo",
    )
    assert balance(shop) == Decimal("100.00")
    assert audit_trail("wallet.adjust") == []
    assert_ledger_balanced()


# -- recharges ------------------------------------------------------------------------------------


def test_retrying_a_failed_recharge_debits_again_requeues_and_is_audited(
    client, shop, product, staff
):
    order = place(shop, product, number=REJECTS)
    process(order)
    recharge = order.recharges.get()
    assert recharge.status == "failed" and recharge.refunded
    assert balance(shop) == Decimal("100.00")

    response = act(client, "/admin/recharges/recharge/", "retry_failed", [recharge])
    assert response.status_code == 302
    recharge.refresh_from_db()
    assert recharge.status == "queued" and recharge.retries == 1 and not recharge.refunded
    assert balance(shop) == Decimal("95.00")
    assert Payment.objects.get(pk=order.payment.pk).status == "captured"
    event = recharge.events.order_by("-id").first()
    assert event.to_status == "queued" and event.actor == staff
    assert audit_trail("recharge.retry")[0].target_id == recharge.public_id
    assert_ledger_balanced()


def test_retrying_a_delivered_recharge_is_refused_and_changes_nothing(client, shop, product):
    order = place(shop, product)
    process(order)
    recharge = order.recharges.get()
    response = act(client, "/admin/recharges/recharge/", "retry_failed", [recharge])
    recharge.refresh_from_db()
    assert recharge.status == "delivered" and balance(shop) == Decimal("95.00")
    assert audit_trail("recharge.retry") == []
    assert_ledger_balanced()
    assert response.status_code == 302


def test_refunding_an_undelivered_recharge_fails_it_and_refunds_once(client, shop, product, staff):
    order = place(shop, product, quantity=2)
    first, second = order.recharges.order_by("pk")
    assert balance(shop) == Decimal("90.00")
    form = act(client, "/admin/recharges/recharge/", "refund_undelivered", [first])
    assert form.status_code == 200 and b'name="reason"' in form.content
    for _ in range(2):
        act(
            client,
            "/admin/recharges/recharge/",
            "refund_undelivered",
            [first],
            apply="1",
            reason="stuck at the operator",
        )
    first.refresh_from_db()
    second.refresh_from_db()
    assert (
        first.status == "failed" and first.refunded and first.failure_code == "cancelled_by_staff"
    )
    assert second.status == "queued"
    assert balance(shop) == Decimal("95.00")
    payment = Payment.objects.get(pk=order.payment.pk)
    assert payment.status == "partially_refunded" and payment.refunded_amount == Decimal("5.00")
    records = audit_trail("recharge.refund")
    assert records[0].detail["from_status"] == "queued" and records[0].actor == staff
    assert_ledger_balanced()


def test_refund_skips_delivered_recharges(client, shop, product):
    order = place(shop, product)
    process(order)
    recharge = order.recharges.get()
    act(
        client,
        "/admin/recharges/recharge/",
        "refund_undelivered",
        [recharge],
        apply="1",
        reason="customer asked",
    )
    recharge.refresh_from_db()
    assert recharge.status == "delivered" and balance(shop) == Decimal("95.00")
    assert_ledger_balanced()


def test_the_recharge_page_shows_its_history(client, shop, product):
    order = place(shop, product, number=REJECTS)
    process(order)
    recharge = order.recharges.get()
    page = client.get(f"/admin/recharges/recharge/{recharge.pk}/change/").content.decode()
    assert "History" in page or "history" in page
    for status in ("queued", "dispatched", "failed"):
        assert status in page
    assert "invalid_recipient" in page


# -- accounts and keys ----------------------------------------------------------------------------


def test_revoking_keys_is_audited(client, shop, staff):
    key, _ = make_key(shop, mode="live")
    act(client, "/admin/accounts/apikey/", "revoke_keys", [key])
    key.refresh_from_db()
    assert key.revoked_at is not None and key.revoked_by == staff
    assert audit_trail("api_key.revoke")[0].target_id == key.public_id


def test_setting_key_limits_by_action_and_by_form_is_audited(client, shop):
    key, _ = make_key(shop, mode="live")
    act(
        client,
        "/admin/accounts/apikey/",
        "set_limits",
        [key],
        apply="1",
        rate_limit_per_minute="30",
        max_units_per_request="",
    )
    key.refresh_from_db()
    assert key.rate_limit_per_minute == 30 and key.max_units_per_request is None
    record = audit_trail("api_key.set_limits")[0]
    assert record.detail["after"] == {"rate_limit_per_minute": 30, "max_units_per_request": None}

    client.post(
        f"/admin/accounts/apikey/{key.pk}/change/",
        {"rate_limit_per_minute": "60", "max_units_per_request": "10"},
    )
    key.refresh_from_db()
    assert key.rate_limit_per_minute == 60 and key.max_units_per_request == 10
    assert len(audit_trail("api_key.set_limits")) == 2


def test_marking_accounts_b2b_and_back_is_audited(client, shop, staff):
    account = shop.account
    act(client, "/admin/accounts/account/", "mark_b2b", [account])
    assert Account.objects.get(pk=account.pk).is_b2b
    act(client, "/admin/accounts/account/", "unmark_b2b", [account])
    assert not Account.objects.get(pk=account.pk).is_b2b
    records = audit_trail("account.set_b2b")
    assert [r.detail for r in records] == [
        {"before": False, "after": True},
        {"before": True, "after": False},
    ]
    assert all(r.actor == staff for r in records)


def test_setting_a_discount_changes_prices_and_is_audited(client, shop, product):
    account = shop.account
    response = act(
        client,
        "/admin/accounts/account/",
        "set_discount",
        [account],
        apply="1",
        discount_percent="150",
    )
    assert response.status_code == 200  # the form again: out of range
    act(
        client,
        "/admin/accounts/account/",
        "set_discount",
        [account],
        apply="1",
        discount_percent="10",
    )
    assert Account.objects.get(pk=account.pk).discount_percent == Decimal("10.00")
    assert audit_trail("account.set_discount")[0].detail == {"before": "0.00", "after": "10.00"}
    shop.account.refresh_from_db()
    place(shop, product)
    assert balance(shop) == Decimal("95.50")
    assert_ledger_balanced()


def test_the_account_form_cannot_change_b2b_or_discount_directly(client, shop):
    page = client.get(f"/admin/accounts/account/{shop.account.pk}/change/").content.decode()
    assert 'name="is_b2b"' not in page and 'name="discount_percent"' not in page


# -- CSV exports ----------------------------------------------------------------------------------


def read_csv(response) -> list[dict]:
    assert response["Content-Type"].startswith("text/csv")
    assert "attachment" in response["Content-Disposition"]
    return list(csv.DictReader(io.StringIO(response.content.decode())))


def test_payments_export_as_csv_and_the_export_is_recorded(client, shop, product, staff):
    first = place(shop, product, quantity=2)
    second = place(shop, product, number=REJECTS)
    process(second)
    rows = read_csv(
        act(client, "/admin/payments/payment/", "export_csv", [first.payment, second.payment])
    )
    assert [r["id"] for r in rows] == [second.payment.public_id, first.payment.public_id]
    assert rows[0]["status"] == "refunded" and rows[0]["refunded_amount"] == "5.00"
    assert rows[1]["amount"] == "10.00" and rows[1]["currency"] == "EUR"
    assert rows[1]["account_id"] == shop.account.public_id and rows[1]["livemode"] == "True"
    record = audit_trail("payment.export_csv")[0]
    assert record.actor == staff and record.detail["count"] == 2


def test_recharges_export_as_csv(client, shop, product):
    order = place(shop, product, number=REJECTS)
    process(order)
    recharge = order.recharges.get()
    (row,) = read_csv(act(client, "/admin/recharges/recharge/", "export_csv", [recharge]))
    assert row["id"] == recharge.public_id and row["status"] == "failed"
    assert row["failure_code"] == "invalid_recipient" and row["refunded"] == "True"
    assert row["recipient_number"] == REJECTS and row["country"] == "MX"
    assert row["operator"] == product.operator.name
    assert row["local_amount"] == str(recharge.face_value)
    assert row["local_currency"] == product.local_currency
    assert audit_trail("recharge.export_csv")[0].detail["ids"] == [recharge.public_id]


def test_csv_cells_that_look_like_formulas_are_defused(client, product):
    user = UserFactory(account__name='=HYPERLINK("http://evil")')
    fund(user, "10.00")
    order = place(user, product)
    (row,) = read_csv(act(client, "/admin/payments/payment/", "export_csv", [order.payment]))
    assert row["account"].startswith("'=")


# -- audit trail ----------------------------------------------------------------------------------


def test_the_audit_trail_is_listed_and_read_only(client, shop, staff):
    key, _ = make_key(shop, mode="live")
    act(client, "/admin/accounts/apikey/", "revoke_keys", [key])
    record = StaffAction.objects.get()
    page = client.get("/admin/backoffice/staffaction/").content.decode()
    assert "api_key.revoke" in page and key.public_id in page and staff.email in page
    assert client.get(f"/admin/backoffice/staffaction/{record.pk}/change/").status_code == 200
    assert client.post(f"/admin/backoffice/staffaction/{record.pk}/delete/").status_code == 403
    with pytest.raises(RuntimeError):
        record.delete()


def test_a_view_only_staff_user_sees_no_money_actions(shop):
    from django.contrib.auth.models import Permission

    clerk = UserFactory(is_staff=True)
    clerk.user_permissions.add(*Permission.objects.filter(codename__startswith="view_"))
    client = Client()
    second_factor_login(client, clerk)
    page = client.get("/admin/wallet/topup/").content.decode()
    assert 'value="approve"' not in page
    topup = topup_request(
        account=shop.account, amount=Decimal("50.00"), method=TopUp.Method.BANK_TRANSFER
    )
    act(client, "/admin/wallet/topup/", "approve", [topup])
    topup.refresh_from_db()
    assert topup.status == "pending" and balance(shop) == Decimal("100.00")
