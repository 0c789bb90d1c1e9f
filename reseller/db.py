"""Database connections around long waits, and plain inserts for the hottest writes.

With a connection pool (``DATABASE_POOL_SIZE``), a thread that is about to wait on a third
party (a provider's answer) gives its connection back first: hundreds of calls in flight then
hold only as many connections as threads are doing database work. Without a pool, or inside a
transaction, nothing changes.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC, date, datetime
from decimal import Decimal
from typing import Any
from uuid import UUID

from django.db import connection, connections
from django.db.models import Model
from psycopg.types.json import Jsonb


def json_read(value: Any) -> Any:
    """A ``json``/``jsonb`` value read with a plain cursor: Django has psycopg hand those over
    as text (its fields decode them), so a raw query decodes them here."""
    return json.loads(value) if isinstance(value, str) else value


def datetime_read(value: datetime | str) -> datetime:
    """A ``datetime`` column read with a plain cursor, aware: PostgreSQL gives it aware,
    SQLite naive in UTC (or as its text)."""
    if isinstance(value, str):
        value = datetime.fromisoformat(value)
    return value if value.tzinfo is not None else value.replace(tzinfo=UTC)


def loaded[M: Model](model: type[M], values: dict[str, Any]) -> M:
    """An instance of ``model`` with these attributes, as a query with ``.only()`` builds it:
    the other fields are deferred, so no default is computed (``Model(**values)`` computes
    every other field's default: a new public id and secret for an endpoint)."""
    return model.from_db(
        connection.alias,
        list(values),
        [values[field.attname] for field in model._meta.concrete_fields if field.attname in values],
    )


def connection_release(alias: str = "default") -> None:
    connection = connections[alias]
    if (
        connection.connection is not None
        and "pool" in connection.settings_dict.get("OPTIONS", {})
        and not connection.in_atomic_block
    ):
        connection.close()


# -- plain inserts: the ORM's rows without its query building, for the hottest writes --------


def quote(name: str) -> str:
    return connection.ops.quote_name(name)


def insert_values(objs: Sequence[Model], refs: dict[str, str], params: list) -> tuple[str, str]:
    """``(columns, VALUES rows)`` for instances of one model, their values prepared by their
    fields as ``save`` prepares them and appended to ``params``; a column named in ``refs``
    takes that SQL instead (another clause's id)."""
    fields = [field for field in objs[0]._meta.concrete_fields if not field.primary_key]
    rows = []
    for obj in objs:
        values = []
        for field in fields:
            if field.attname in refs:
                values.append(refs[field.attname])
                continue
            values.append("%s")
            params.append(field.get_db_prep_save(field.pre_save(obj, True), connection))
        rows.append(f"({', '.join(values)})")
    return ", ".join(quote(str(field.column)) for field in fields), ", ".join(rows)


def insert_clause(
    alias: str, objs: Sequence[Model], refs: dict[str, str], params: list, returning: str = "id"
) -> str:
    """``alias AS (INSERT … RETURNING …)`` for instances of one model, for a ``WITH`` of
    several: their rows go as ONE JSON parameter (``json_populate_recordset`` gives each value
    its column's type), so the statement's text is the same for any number of rows and short
    enough for psycopg to keep it parsed and prepared; rows are inserted, and take their ids,
    in the instances' order. A column in ``refs`` takes that SQL (another clause's id)."""
    fields = [field for field in objs[0]._meta.concrete_fields if not field.primary_key]
    rows = [
        {
            field.column: _json_value(field.get_db_prep_save(field.pre_save(obj, True), connection))
            for field in fields
            if field.attname not in refs
        }
        for obj in objs
    ]
    params.append(json.dumps(rows, separators=(",", ":")))
    table = quote(objs[0]._meta.db_table)
    columns = ", ".join(quote(str(field.column)) for field in fields)
    values = ", ".join(
        refs[field.attname] if field.attname in refs else f"x.{quote(str(field.column))}"
        for field in fields
    )
    return (
        f"{alias} AS (INSERT INTO {table} ({columns}) SELECT {values}"  # noqa: S608 (names from the models; values are parameters)
        f" FROM json_populate_recordset(NULL::{table}, %s) WITH ORDINALITY AS x"
        f" ORDER BY x.ordinality RETURNING {returning})"
    )


def _json_value(value: Any) -> Any:
    if isinstance(value, Decimal):
        return str(value)  # exact: PostgreSQL reads the text into the numeric column
    if isinstance(value, datetime | date):
        return value.isoformat()
    if isinstance(value, Jsonb):
        return value.obj
    if isinstance(value, UUID):
        return str(value)
    return value


def saved(obj: Model, pk: int, **parents: Model) -> None:
    """Leave an instance as ``save`` leaves it: its id set, and its parents (saved already)
    set again, which sets their ids and keeps them as its related objects."""
    obj.pk = pk
    for name, parent in parents.items():
        setattr(obj, name, parent)
    obj._state.adding = False
    obj._state.db = connection.alias


def model_insert(obj: Model) -> None:
    """``obj.save()`` for a new row, in one plain ``INSERT … RETURNING id``."""
    params: list = []
    columns, rows = insert_values([obj], {}, params)
    table = quote(obj._meta.db_table)
    with connection.cursor() as cursor:
        cursor.execute(
            f"INSERT INTO {table} ({columns}) VALUES {rows} RETURNING id",  # noqa: S608 (names from the model; values are parameters)
            params,
        )
        saved(obj, cursor.fetchone()[0])


def locked_row[M: Model](model: type[M], **where: Any) -> M | None:
    """``model.objects.select_for_update().filter(**where).first()`` for a model whose columns
    need no conversion (no JSON): on PostgreSQL one plain ``SELECT … FOR UPDATE`` without the
    ORM's query building (elsewhere the ORM's). ``where`` names columns, compared for equality."""
    if connection.vendor != "postgresql":
        return model._default_manager.select_for_update().filter(**where).first()
    fields = model._meta.concrete_fields
    columns = ", ".join(quote(str(field.column)) for field in fields)
    condition = " AND ".join(f"{quote(name)} = %s" for name in where)
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT {columns} FROM {quote(model._meta.db_table)} WHERE {condition}"  # noqa: S608 (names from the model; values are parameters)
            " LIMIT 1 FOR UPDATE",
            list(where.values()),
        )
        row = cursor.fetchone()
    if row is None:
        return None
    return model.from_db(connection.alias, [field.attname for field in fields], row)
