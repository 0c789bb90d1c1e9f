"""Issue 43, item 10: models that moved app (payments, recharges and the card checkout left the
orders app with their tables) changed their back-office address with their app label. Staff
bookmarks of the old addresses get a permanent redirect to the same page at the new address,
with its id and query string; nothing else changes."""

from __future__ import annotations

import pytest
from django.contrib import admin
from django.db.migrations import operations
from django.db.migrations.loader import MigrationLoader
from django.test import Client

from tests.factories import ProductFactory, UserFactory
from tests.helpers import fund, place, second_factor_login

pytestmark = pytest.mark.django_db


def models_that_moved_app() -> dict[tuple[str, str], str]:
    """From the migrations history: (old app, model) → new app, for every model deleted from
    one app's state and created in another's (a move keeps the table, so the new app's
    CreateModel names the old table)."""

    def walk(ops):
        for op in ops:
            if isinstance(op, operations.SeparateDatabaseAndState):
                yield from walk(op.state_operations)
            else:
                yield op

    deleted, created = set(), {}
    for (app, _name), migration in MigrationLoader(None).disk_migrations.items():
        for op in walk(migration.operations):
            if isinstance(op, operations.DeleteModel):
                deleted.add((app, op.name_lower))
            elif isinstance(op, operations.CreateModel):
                created.setdefault(op.name_lower, set()).add(app)
    return {
        (old, model): new for old, model in deleted for new in created.get(model, set()) - {old}
    }


REGISTERED = {(m._meta.app_label, m._meta.model_name) for m in admin.site._registry}


def moved_and_registered() -> list[tuple[str, str, str]]:
    return sorted(
        (old, model, new)
        for (old, model), new in models_that_moved_app().items()
        if (new, model) in REGISTERED
    )


@pytest.fixture
def staff_client():
    client = Client()
    second_factor_login(client, UserFactory(is_staff=True, is_superuser=True))
    return client


def test_the_history_has_the_moves_the_issue_names():
    moved = {(old, model): new for old, model, new in moved_and_registered()}
    assert moved[("orders", "payment")] == "payments"
    assert moved[("orders", "recharge")] == "recharges"
    assert moved[("orders", "rechargeevent")] == "recharges"
    assert moved[("orders", "cardcheckout")] == "checkout"
    assert moved[("orders", "stripeevent")] == "checkout"


@pytest.mark.parametrize(("old", "model", "new"), moved_and_registered())
@pytest.mark.parametrize("page", ["", "?q=x&p=2", "7/change/", "7/history/", "7/delete/", "7/"])
def test_an_old_admin_address_of_a_moved_model_redirects_permanently_to_its_new_one(
    client, old, model, new, page
):
    response = client.get(f"/admin/{old}/{model}/{page}")
    assert response.status_code == 301
    assert response["Location"] == f"/admin/{new}/{model}/{page}"


def test_a_bookmarked_recharge_and_a_filtered_payment_list_open_after_the_redirect(staff_client):
    shop = UserFactory()
    fund(shop, "20.00")
    order = place(shop, ProductFactory())
    recharge = order.recharges.get()
    page = staff_client.get(f"/admin/orders/recharge/{recharge.pk}/change/", follow=True)
    assert page.redirect_chain == [(f"/admin/recharges/recharge/{recharge.pk}/change/", 301)]
    assert page.status_code == 200 and recharge.public_id in page.content.decode()
    listing = staff_client.get("/admin/orders/payment/?method__exact=wallet", follow=True)
    assert listing.redirect_chain == [("/admin/payments/payment/?method__exact=wallet", 301)]
    assert listing.status_code == 200 and order.payment.public_id in listing.content.decode()


def test_a_form_posted_to_an_old_address_is_sent_on_with_its_method(staff_client):
    response = staff_client.post("/admin/orders/recharge/", {"action": "export_csv"})
    assert response.status_code == 308
    assert response["Location"] == "/admin/recharges/recharge/"


def test_an_anonymous_visitor_is_redirected_then_asked_to_log_in(client):
    response = client.get("/admin/orders/payment/", follow=True)
    assert response.redirect_chain[0] == ("/admin/payments/payment/", 301)
    assert response.redirect_chain[-1][0].startswith("/admin/login/")


@pytest.mark.parametrize("address", ["/admin/orders/order/", "/admin/orders/", "/admin/orders/x/"])
def test_addresses_of_models_that_stayed_are_not_redirected(staff_client, address):
    assert staff_client.get(address).status_code in (200, 404)
