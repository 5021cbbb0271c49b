"""Hot hand-written statements as server-side prepared statements on PostgreSQL (issue 12).

The events API runs the same few written-out statements on every call (the API key lookup with its rate-limit
take, the contact with its candidate automations, the run opening, the event insert). Sent as Django sends
everything (parameters merged into the text by psycopg's client-side binding), PostgreSQL parses, analyzes and
plans each of them again on every call. `prepared_cursor()` is `connection.cursor()` whose `execute` binds the
parameters server-side and runs the statement prepared (psycopg's `prepare=True`: the first execution on a
connection prepares it under a generated name; later ones only bind and execute, and after five executions
PostgreSQL keeps a generic plan when it is not costlier than the custom ones). Elsewhere (SQLite) it is the plain
cursor.

Why not Django's `server_side_binding` option for everything: the ORM's statements are not preparable as a rule
(Django #20516) and Django keeps psycopg's automatic preparation off (`prepare_threshold` None) so that
transaction-pooling connection poolers keep working. Here only the call sites that ask for it prepare, and only
their statements; psycopg prepares per connection (a new connection prepares again; a rollback makes psycopg
forget and deallocate them, and they are prepared again on next use). Behind a connection pooler that does not
keep a session's prepared statements (PgBouncer in transaction mode before 1.21), set
`OWLAT_PREPARED_STATEMENTS = False`.

What the call sites must keep in mind: parameters are bound, not merged into the text, so each gets a type.
`str` goes as `unknown` (PostgreSQL infers it from the context: compare or cast it, as `%s::uuid` and
`%s::jsonb` do), `datetime` as `timestamptz`, `float` as `float8`, `int` as the smallest integer type holding it
(psycopg keys a prepared statement by the text and the parameter types, so another type prepares another
statement), `uuid.UUID` as `uuid`. A statement whose text changes with its input (a `VALUES` list of one row per
item) should be prepared only in its hot shape: every text is one more prepared statement on the server (psycopg
keeps the 100 most recent per connection and deallocates older ones).
"""

from __future__ import annotations

import functools
from typing import Any

from django.conf import settings
from django.db import DEFAULT_DB_ALIAS, connections
from django.db import connection as default_connection

_ALWAYS_ASKED = 2**31  # psycopg prepares only when asked (prepare=True) with a threshold that is not None


def prepared_cursor(connection: Any = None) -> Any:
    """A cursor of `connection` (default: the default database's) whose `execute` runs its statement prepared
    on PostgreSQL; the plain `connection.cursor()` elsewhere or with `OWLAT_PREPARED_STATEMENTS = False`. Use
    it as `connection.cursor()` (`with prepared_cursor() as cursor: cursor.execute(sql, params)`); only for
    statements whose text is one of a few (see the module's doc)."""
    # the wrapper itself, not `django.db.connection`: every attribute read through that proxy looks the
    # thread's connections up again (issue 12: eight lookups a statement)
    connection = connection or connections[DEFAULT_DB_ALIAS]
    if connection.vendor != "postgresql" or not settings.OWLAT_PREPARED_STATEMENTS:
        return connection.cursor()
    # connection.cursor() without its create_cursor: the health check, the connection, Django's error
    # translation and its cursor wrapper (query logging, execute wrappers) as for any other cursor
    connection.close_if_health_check_failed()
    connection.ensure_connection()
    with connection.wrap_database_errors:
        pg = connection.connection
        cursor = _preparing_cursor_class()(pg)
        _register_timezone(connection, pg, cursor)
        return connection._prepare_cursor(cursor)


def _register_timezone(connection: Any, pg: Any, cursor: Any) -> None:
    """As Django's `create_cursor`: timestamptz values load in the connection's time zone. The check is made
    once per connection and time zone (issue 12: it was on every statement): while the connection's own loader
    has the zone, as Django sets it up when it connects, nothing needs registering."""
    timezone = connection.timezone
    if connection.__dict__.get("_owlat_tz_checked") == (pg, timezone):
        return
    from django.db.backends.postgresql.psycopg_any import register_tzloader
    from psycopg.pq import Format

    loader = pg.adapters.get_loader(_timestamptz_oid(), Format.TEXT)
    if timezone != loader.timezone:
        register_tzloader(timezone, cursor)
    else:
        connection._owlat_tz_checked = (pg, timezone)


@functools.cache
def _timestamptz_oid() -> int:
    from psycopg import adapters

    return adapters.types["timestamptz"].oid


@functools.cache
def _preparing_cursor_class() -> type:
    from django.db.backends.postgresql.base import ServerBindingCursor

    class PreparingCursor(ServerBindingCursor):
        """Django's server-side-binding psycopg cursor whose statements run prepared."""

        def execute(self, query: Any, params: Any = None, **kwargs: Any) -> Any:
            conn = self.connection
            threshold = conn.prepare_threshold
            # None (Django's default) would make psycopg ignore prepare=True; set only around this call, so
            # that Django's own (client-side binding) statements keep skipping psycopg's preparation cache
            conn.prepare_threshold = _ALWAYS_ASKED
            try:
                super().execute(query, params, prepare=True)
            finally:
                conn.prepare_threshold = threshold
            # psycopg keeps no text of a prepared execution; Django's query log reads `_query.query`
            self._query = _Executed(query, params, conn)
            return self

    return PreparingCursor


class _Executed:
    """The statement text Django's query log (`last_executed_query`: `cursor._query.query`) shows for a prepared
    execution: the parameters merged in as client-side binding would have, built only when read."""

    __slots__ = ("conn", "params", "sql")

    def __init__(self, sql: Any, params: Any, conn: Any) -> None:
        self.sql, self.params, self.conn = sql, params, conn

    @property
    def query(self) -> bytes:
        from psycopg import ClientCursor

        with ClientCursor(self.conn) as cursor:
            return cursor.mogrify(self.sql, self.params).encode()


def prepared_models(model: type, where: str, params: Any, *, connection: Any = None) -> list[Any]:
    """`model`'s rows matching `where` (written-out SQL over its table's columns, e.g. `"automation_id =
    ANY(%s::uuid[])"`) as instances built as the ORM builds them (`model_from_row`), read through
    `prepared_cursor()`: for a hot read whose ORM form costs more to compile and to plan than to run. PostgreSQL
    only (the `where` is PostgreSQL's); keep the ORM form for other databases. `where` must be one of a few fixed
    texts (see the module's doc)."""
    connection = connection or connections[DEFAULT_DB_ALIAS]
    with prepared_cursor(connection) as cursor:
        cursor.execute(_select_all(model, where), params)
        rows = cursor.fetchall()
    return [model_from_row(model, row, connection=connection) for row in rows]


def model_from_row(model: type, values: Any, *, connection: Any = None) -> Any:
    """The instance of `model` from the values of its concrete columns (in `_meta.concrete_fields` order), built
    as the ORM builds a fetched row: each column's database converters applied (the backend's, then the
    field's, as the compiler collects them), then `Model.from_db`."""
    connection = connection or connections[DEFAULT_DB_ALIAS]
    names, converters = _model_columns(model)
    if converters:
        values = list(values)
        for i, chain, expression in converters:
            value = values[i]
            if value is not None:
                for convert in chain:
                    value = convert(value, expression, connection)
                values[i] = value
    return model.from_db(connection.alias, names, values)


@functools.cache
def _model_columns(model: type) -> tuple[list[str], list[tuple[int, tuple[Any, ...], Any]]]:
    """The attnames of `model`'s concrete fields in order, and (position, converters, column expression) of
    those that have database converters."""
    connection = default_connection
    table = model._meta.db_table
    converters = []
    for i, f in enumerate(model._meta.concrete_fields):
        col = f.get_col(table)
        chain = tuple(connection.ops.get_db_converters(col) + f.get_db_converters(connection))
        if chain:
            converters.append((i, chain, col))
    return [f.attname for f in model._meta.concrete_fields], converters


@functools.cache
def _select_all(model: type, where: str) -> str:
    """The SELECT of every concrete column of `model` under `where`."""
    qn = default_connection.ops.quote_name
    columns = ", ".join(qn(f.column) for f in model._meta.concrete_fields)
    return f"SELECT {columns} FROM {qn(model._meta.db_table)} WHERE {where}"
