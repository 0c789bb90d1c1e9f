"""Payments and recharges moved out of the orders app with their tables: a database migrated
before the move keeps every row, and the content types follow the models."""

from __future__ import annotations

import pytest
from django.contrib.contenttypes.models import ContentType
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

BEFORE = [("orders", "0010_batches"), ("payments", None), ("recharges", None)]
AFTER = [("orders", "0011_payments_and_recharges_move_out")]


@pytest.mark.django_db(transaction=True)
def test_the_move_keeps_the_tables_and_their_rows_and_moves_the_content_types():
    executor = MigrationExecutor(connection)
    executor.migrate(BEFORE)
    old = executor.loader.project_state(BEFORE[:1]).apps
    assert old.get_model("orders", "Payment")._meta.db_table == "orders_payment"
    # A content type as a database before the move has it (created after its migrate).
    ContentType.objects.filter(app_label="payments", model="payment").delete()
    moved, _created = ContentType.objects.get_or_create(app_label="orders", model="payment")
    tables_before = set(connection.introspection.table_names())

    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(AFTER)

    assert set(connection.introspection.table_names()) == tables_before  # no table moved
    moved.refresh_from_db()
    assert moved.app_label == "payments"
    new = executor.loader.project_state(AFTER).apps
    assert new.get_model("payments", "Payment")._meta.db_table == "orders_payment"
    assert new.get_model("recharges", "Recharge")._meta.db_table == "orders_recharge"
    assert new.get_model("recharges", "RechargeEvent")._meta.db_table == "orders_rechargeevent"
    field = new.get_model("orders", "CardCheckout")._meta.get_field("payment")
    assert field.related_model._meta.label == "payments.Payment"
