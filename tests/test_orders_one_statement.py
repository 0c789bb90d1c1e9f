"""The live order's one-statement write (orders/order_insert.py) stores exactly the rows the
ORM's path stores, in one statement instead of seven."""

from decimal import Decimal

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext

import orders.services as order_services
from orders.models import Order, OrderLine, Payment, Recharge, RechargeEvent
from orders.pricing import LineRequest
from tests.factories import ProductFactory, UserFactory
from tests.helpers import assert_ledger_balanced
from wallet.models import LedgerEntry, Wallet
from wallet.services import wallet_get_or_create, wallet_topup_manual

pytestmark = pytest.mark.django_db
WRITES = ("INSERT", "UPDATE", "WITH")


def place(user, lines):
    with transaction.atomic():
        return order_services.order_place_with_wallet(
            account=user.account,
            wallet=wallet_get_or_create(account=user.account),
            livemode=True,
            channel="api",
            currency="EUR",
            user=user,
            lines=lines,
            references=["ref-a", "ref-b"],
        )


def stored(order: Order) -> dict:
    """Everything the order wrote, without what differs by nature (ids, public ids, times)."""
    payment = Payment.objects.get(order=order)
    entry = LedgerEntry.objects.get(reference=payment.public_id)
    recharges = Recharge.objects.filter(order=order).order_by("id")
    drop = {"id", "public_id", "order_id", "payment_id", "created_at", "updated_at"}
    times = {"queued_at", "captured_at", "dispatched_at", "delivered_at", "failed_at"}

    def plain(row: dict) -> dict:
        return {k: (v is not None if k in times else v) for k, v in row.items() if k not in drop}

    return {
        "order": plain(Order.objects.filter(pk=order.pk).values()[0]),
        "lines": [plain(r) for r in OrderLine.objects.filter(order=order).order_by("id").values()],
        "payment": plain(Payment.objects.filter(pk=payment.pk).values()[0]),
        "entry": {
            **plain(
                LedgerEntry.objects.filter(pk=entry.pk).values("kind", "amount", "currency")[0]
            ),
            "memo": entry.memo == f"order {order.public_id}",
            "by": entry.created_by_id,
        },
        "recharges": [plain(r) for r in recharges.values()],
        "history": [
            list(
                RechargeEvent.objects.filter(recharge=r).values_list(
                    "from_status", "to_status", "note", "actor_id"
                )
            )
            for r in recharges
        ],
    }


def test_the_one_statement_write_stores_what_the_orm_stores(monkeypatch):
    product, other = ProductFactory(retail_price=Decimal("5.00")), ProductFactory()
    user = UserFactory()
    wallet_topup_manual(account=user.account, amount=Decimal("500.00"))
    lines = [
        LineRequest(product=product, recipient_number="+525512345678", quantity=2),
        LineRequest(product=other, recipient_number="+525512340000", quantity=3),
    ]
    with CaptureQueriesContext(connection) as fast:
        one = place(user, lines)
    monkeypatch.setattr(order_services, "ONE_STATEMENT_ROWS", 0)  # the ORM's path
    with CaptureQueriesContext(connection) as orm:
        two = place(user, lines)

    def writes(capture) -> list[str]:
        return [q["sql"] for q in capture.captured_queries if q["sql"].startswith(WRITES)]

    assert len(writes(orm)) == 7
    assert len(writes(fast)) == 1 and writes(fast)[0].startswith("WITH o AS (INSERT")
    assert stored(one) == stored(two)
    # the instances came back as saved rows: the 201 is rendered from them
    assert [r.pk for r in one.recharges.all()] == list(
        Recharge.objects.filter(order=one).order_by("id").values_list("pk", flat=True)
    )
    assert [r.reference for r in one.recharges.all()] == ["ref-a"] * 2 + ["ref-b"] * 3
    assert one.payment.pk == Payment.objects.get(order=one).pk
    after = [
        e.balance_after
        for e in LedgerEntry.objects.filter(wallet__account=user.account).order_by("id")
    ]
    assert after == [
        Decimal("500.00"),
        Decimal("500.00") - one.total,
        Decimal("500.00") - 2 * one.total,
    ]
    wallet = Wallet.objects.get(account=user.account, kind="live")
    assert wallet.balance == Decimal("500.00") - 2 * one.total
    assert_ledger_balanced()


def test_public_ids_are_20_symbols_of_62_drawn_evenly():
    from collections import Counter

    from reseller.ids import make_id, random_base62

    ids = {make_id("pay") for _ in range(2000)}
    assert len(ids) == 2000 and all(len(i) == 24 and i.startswith("pay_") for i in ids)
    counts = Counter("".join(random_base62(62) for _ in range(2000)))
    assert len(counts) == 62  # every symbol, each near 2000 times
    assert min(counts.values()) > 1700 and max(counts.values()) < 2300


def test_the_wallet_is_locked_and_read_as_the_orm_reads_it():
    from wallet.models import Wallet
    from wallet.services import wallet_lock_for

    user = UserFactory()
    wallet_topup_manual(account=user.account, amount=Decimal("12.34"))
    with transaction.atomic():
        locked = wallet_lock_for(account=user.account)
        with connection.cursor() as cursor:  # the row is locked by this transaction
            cursor.execute(
                "SELECT count(*) FROM pg_locks l JOIN pg_class c ON c.oid = l.relation"
                " WHERE c.relname = 'wallet_wallet' AND l.mode = 'RowShareLock'"
                " AND l.pid = pg_backend_pid()"
            )
            assert cursor.fetchone()[0] == 1
    orm = Wallet.objects.get(pk=locked.pk)
    fields = [f.attname for f in Wallet._meta.concrete_fields]
    assert [getattr(locked, f) for f in fields] == [getattr(orm, f) for f in fields]
    assert not locked._state.adding and locked.balance == Decimal("12.34")


def test_the_statement_is_one_text_for_any_rows_short_enough_to_stay_prepared():
    """psycopg re-parses, and never prepares, a statement over 4,096 bytes or 50 parameters:
    the rows go as JSON parameters, so the text is the same for 1 or 9 recharges."""
    product = ProductFactory(retail_price=Decimal("5.00"))
    user = UserFactory()
    wallet_topup_manual(account=user.account, amount=Decimal("500.00"))
    sent: list[tuple[str, list]] = []

    def keep(execute, sql, params, many, context):
        sent.append((sql, params))
        return execute(sql, params, many, context)

    with connection.execute_wrapper(keep):
        for quantity in (1, 9):
            with transaction.atomic():
                order_services.order_place_with_wallet(
                    account=user.account,
                    livemode=True,
                    channel="api",
                    currency="EUR",
                    lines=[
                        LineRequest(
                            product=product, recipient_number="+525512345678", quantity=quantity
                        )
                    ],
                )
    statements = [(sql, params) for sql, params in sent if sql.startswith("WITH o AS")]
    assert len(statements) == 2 and statements[0][0] == statements[1][0]
    sql, params = statements[0]
    assert len(sql.encode()) <= 4096 and len(params) <= 50
    assert Recharge.objects.filter(account=user.account).count() == 10
    assert_ledger_balanced()


def test_the_written_instances_keep_their_parents_as_related_objects(django_assert_num_queries):
    product = ProductFactory(retail_price=Decimal("5.00"))
    user = UserFactory()
    wallet_topup_manual(account=user.account, amount=Decimal("50.00"))
    order = place(
        user, [LineRequest(product=product, recipient_number="+525512345678", quantity=2)]
    )
    with django_assert_num_queries(0):
        payment = order.payment
        assert payment.order is order
        for recharge in order.recharges.all():
            assert recharge.order is order and recharge.payment is payment
            assert recharge.order_id == order.pk and recharge.payment_id == payment.pk
        for line in order.lines.all():
            assert line.order is order and line.order_id == order.pk
