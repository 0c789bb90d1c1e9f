"""A paid order's rows in one statement (PostgreSQL): the B2B request's write path.

``order_place_with_wallet`` writes, under the wallet's lock, an order, its lines, its payment,
a ledger entry, the wallet's new balance, one recharge per unit and each recharge's first
history row. Through the ORM that is seven statements, each built in Python and each a
round trip; their building cost more than PostgreSQL takes to run them (docs/performance.md).
Here the same rows, from the same model instances, go in one statement of data-modifying
``WITH`` clauses, where a row that needs another's id reads it from that clause. Every
constraint, trigger and default of the tables applies as it does to the ORM's inserts; the
instances come back with their ids, as ``save`` and ``bulk_create`` leave them.

Values are prepared by each field (``get_db_prep_save``), so what is stored is what the ORM
would store. SQLite (the embedded default) keeps the ORM's path.
"""

from __future__ import annotations

from decimal import Decimal

from django.db import connection

from orders.models import Order, OrderLine, Payment, Recharge, RechargeEvent
from reseller.db import insert_clause, json_read, quote, saved
from wallet.models import LedgerEntry, Wallet

# Orders of more lines and units (a batch of thousands) take the ORM's path, which splits its
# inserts: one statement carries at most 65,535 parameters.
ONE_STATEMENT_ROWS = 200
ORDER_ID = "(SELECT id FROM o)"
PAYMENT_ID = "(SELECT id FROM p)"


def order_insert(
    *,
    order: Order,
    lines: list[OrderLine],
    payment: Payment,
    entry: LedgerEntry,
    wallet: Wallet,
    delta: Decimal,
    recharges: list[Recharge],
    note: str,
) -> None:
    """Insert the order's rows and move ``wallet``'s balance by ``delta``, in one statement;
    the recharges' history rows go from nothing to their status, with ``note``."""
    params: list = []
    clauses = [
        insert_clause("o", [order], {}, params),
        insert_clause("p", [payment], {"order_id": ORDER_ID}, params),
        insert_clause("l", lines, {"order_id": ORDER_ID}, params),
        insert_clause("e", [entry], {}, params),
    ]
    clauses.append(
        f"w AS (UPDATE {quote(Wallet._meta.db_table)} SET balance = balance + %s,"  # noqa: S608 (names from the models; values are parameters)
        " updated_at = %s WHERE id = %s RETURNING id)"
    )
    params += [delta, entry.created_at, wallet.pk]
    clauses.append(
        insert_clause(
            "r",
            recharges,
            {"order_id": ORDER_ID, "payment_id": PAYMENT_ID},
            params,
            returning="id, public_id, status, created_at",
        )
    )
    history = RechargeEvent._meta.db_table
    clauses.append(
        f"h AS (INSERT INTO {quote(history)} (recharge_id, from_status, to_status, note,"  # noqa: S608 (names from the models; values are parameters)
        " actor_id, created_at) SELECT id, '', status, %s, NULL, created_at FROM r RETURNING id)"
    )
    params.append(note)
    sql = (
        "WITH "  # noqa: S608 (names from the models; values are parameters)
        + ", ".join(clauses)
        + " SELECT (SELECT id FROM o), (SELECT id FROM p), (SELECT id FROM e),"
        " ARRAY(SELECT id FROM l ORDER BY id), (SELECT json_object_agg(public_id, id) FROM r),"
        " (SELECT count(*) FROM w), (SELECT count(*) FROM h)"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        order_id, payment_id, entry_id, line_ids, recharge_ids, moved, histories = cursor.fetchone()
    recharge_ids = json_read(recharge_ids)
    if moved != 1 or histories != len(recharges) or len(recharge_ids or {}) != len(recharges):
        raise RuntimeError("the order's rows were not all written")  # rolls the order back
    saved(order, order_id)
    saved(payment, payment_id, order=order)
    saved(entry, entry_id)
    # Lines have no public id: their ids come from the table's sequence, taken row by row in
    # the order the clause inserts them (ORDER BY the rows' ordinality).
    for line, pk in zip(lines, line_ids, strict=True):
        saved(line, pk, order=order)
    for recharge in recharges:
        saved(recharge, recharge_ids[recharge.public_id], order=order, payment=payment)
