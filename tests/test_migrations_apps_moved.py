"""Apps moved out of the orders app with their tables: payments and recharges, then the card
checkout. A database migrated before each move keeps every table and row, and the content
types follow the models."""

from __future__ import annotations

import pytest
from django.contrib.contenttypes.models import ContentType
from django.db import connection

from tests.migration_support import migrated

BEFORE = [("orders", "0010_batches"), ("payments", None), ("recharges", None)]
AFTER = [("orders", "0011_payments_and_recharges_move_out")]
CHECKOUT_BEFORE = [("orders", "0011_payments_and_recharges_move_out"), ("checkout", None)]
CHECKOUT_AFTER = [("orders", "0012_card_checkout_moves_out")]


def _content_type_as_before(label: str, model: str) -> ContentType:
    """A content type as a database before the move has it (created after its migrate)."""
    ContentType.objects.filter(app_label=label, model=model).delete()
    old, _created = ContentType.objects.get_or_create(app_label="orders", model=model)
    return old


@pytest.mark.django_db(transaction=True)
def test_the_move_keeps_the_tables_and_their_rows_and_moves_the_content_types(latest_after):
    old = migrated(BEFORE).loader.project_state(BEFORE[:1]).apps
    assert old.get_model("orders", "Payment")._meta.db_table == "orders_payment"
    moved = _content_type_as_before("payments", "payment")
    tables_before = set(connection.introspection.table_names())

    executor = migrated(AFTER)

    assert set(connection.introspection.table_names()) == tables_before  # no table moved
    moved.refresh_from_db()
    assert moved.app_label == "payments"
    new = executor.loader.project_state(AFTER).apps
    assert new.get_model("payments", "Payment")._meta.db_table == "orders_payment"
    assert new.get_model("recharges", "Recharge")._meta.db_table == "orders_recharge"
    assert new.get_model("recharges", "RechargeEvent")._meta.db_table == "orders_rechargeevent"
    field = new.get_model("orders", "CardCheckout")._meta.get_field("payment")
    assert field.related_model._meta.label == "payments.Payment"


@pytest.mark.django_db(transaction=True)
def test_the_card_checkout_moves_with_its_tables_rows_and_content_types(latest_after):
    old = migrated(CHECKOUT_BEFORE).loader.project_state(CHECKOUT_BEFORE[:1]).apps
    assert old.get_model("orders", "CardCheckout")._meta.db_table == "orders_cardcheckout"
    assert old.get_model("orders", "StripeEvent")._meta.db_table == "orders_stripeevent"
    old.get_model("orders", "StripeEvent").objects.create(
        event_id="evt_before_the_move", type="payment_intent.succeeded"
    )
    moved = {
        model: _content_type_as_before("checkout", model)
        for model in ("cardcheckout", "stripeevent")
    }
    tables_before = set(connection.introspection.table_names())

    executor = migrated(CHECKOUT_AFTER)

    assert set(connection.introspection.table_names()) == tables_before  # no table moved
    for content_type in moved.values():
        content_type.refresh_from_db()
        assert content_type.app_label == "checkout"
    new = executor.loader.project_state(CHECKOUT_AFTER).apps
    checkout = new.get_model("checkout", "CardCheckout")
    event = new.get_model("checkout", "StripeEvent")
    assert checkout._meta.db_table == "orders_cardcheckout"
    assert event._meta.db_table == "orders_stripeevent"
    assert event.objects.get().event_id == "evt_before_the_move"
    related = {
        name: checkout._meta.get_field(name).related_model._meta.label
        for name in ("account", "payment", "topup", "cart")
    }
    assert related == {
        "account": "accounts.Account",
        "payment": "payments.Payment",
        "topup": "wallet.TopUp",
        "cart": "orders.Cart",
    }
    payment = new.get_model("payments", "Payment")
    assert payment._meta.get_field("card_checkout").related_model is checkout
    for name in ("CardCheckout", "StripeEvent"):
        with pytest.raises(LookupError):
            new.get_model("orders", name)
