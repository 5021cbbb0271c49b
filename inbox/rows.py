"""The walker's hot statements written out, as server-side prepared statements on PostgreSQL.

Every step task reads its action with the message, the contact and the agent configuration, locks the message
for its routing, claims and completes its action and inserts the next step's row. Built by the ORM, each of
these statements was compiled again per call (a joined select of four models is ~150 columns to compile) and
parsed and planned again by PostgreSQL; here the text is built once per process from the models' fields and
runs prepared (`owlat.sql.prepared_cursor`). The rows are built as the ORM builds them (`owlat.sql.model_from_row`;
joined rows cached as `select_related` caches them).

PostgreSQL only: the callers keep their ORM statement for other databases (`enabled()`).
"""

from __future__ import annotations

import functools
import uuid
from typing import Any

from django.db import connection
from django.db.models import Model

from owlat.sql import model_from_row, prepared_cursor


def enabled() -> bool:
    return connection.vendor == "postgresql"


@functools.cache
def _fields(model: type[Model]) -> list[Any]:
    fields = list(model._meta.concrete_fields)
    assert fields[0].primary_key
    return fields


def width(model: type[Model]) -> int:
    return len(_fields(model))


def select_list(alias: str, model: type[Model]) -> str:
    qn = connection.ops.quote_name
    return ", ".join(f"{alias}.{qn(f.column)}" for f in _fields(model))


def table(model: type[Model]) -> str:
    return connection.ops.quote_name(model._meta.db_table)


def build(model: type[Model], values: Any) -> Any:
    """The instance from its columns in `select_list` order (None when the primary key is NULL: no row)."""
    if values[0] is None:
        return None
    return model_from_row(model, values, connection=connection)


def cache_related(obj: Model, name: str, related: Model | None) -> None:
    """As `select_related(name)` caches a joined row (None: no related row)."""
    obj._state.fields_cache[name] = related


def uuid_text(value: Any) -> str:
    return str(value if isinstance(value, uuid.UUID) else uuid.UUID(str(value)))


@functools.cache
def fields_by_attname(model: type[Model]) -> dict[str, Any]:
    return {f.attname: f for f in _fields(model)}


def db_value(model: type[Model], attname: str, value: Any) -> Any:
    """A column's parameter as the ORM binds it (JSON adapted, dates as they are), UUIDs as text."""
    if value is None:
        return None
    if isinstance(value, uuid.UUID):
        return str(value)
    field = fields_by_attname(model)[attname]
    if field.get_internal_type() == "UUIDField":
        return uuid_text(value)
    return field.get_db_prep_value(value, connection, prepared=False)


def cast(model: type[Model], attname: str) -> str:
    """The placeholder with its column's type: a prepared statement's parameters are typed from their context,
    and NULL or text would not fit a uuid or jsonb column as is."""
    return f"%s::{fields_by_attname(model)[attname].db_type(connection)}"


def fetchone(sql: str, params: list[Any]) -> tuple | None:
    with prepared_cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.fetchone()


def fetchall(sql: str, params: list[Any]) -> list[tuple]:
    with prepared_cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.fetchall()


def execute(sql: str, params: list[Any]) -> int:
    with prepared_cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.rowcount
