"""Hot hand-written statements as server-side prepared statements on PostgreSQL.

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

import datetime as dt
import functools
from typing import Any

from django.conf import settings
from django.db import DEFAULT_DB_ALIAS, connections
from django.db import connection as default_connection
from django.db.models import Model

from owlat.ids import PrimaryKey

_ALWAYS_ASKED = 2**31  # psycopg prepares only when asked (prepare=True) with a threshold that is not None


def prepared_cursor(connection: Any = None) -> Any:
    """A cursor of `connection` (default: the default database's) whose `execute` runs its statement prepared
    on PostgreSQL; the plain `connection.cursor()` elsewhere or with `OWLAT_PREPARED_STATEMENTS = False`. Use
    it as `connection.cursor()` (`with prepared_cursor() as cursor: cursor.execute(sql, params)`); only for
    statements whose text is one of a few (see the module's doc)."""
    # the wrapper itself, not `django.db.connection`: every attribute read through that proxy looks the
    # thread's connections up again (eight lookups a statement)
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
    once per connection and time zone (it was on every statement): while the connection's own loader
    has the zone, as Django sets it up when it connects, nothing needs registering."""
    timezone = connection.timezone
    if connection.__dict__.get("_owlat_tz_checked") == (pg, timezone):
        return
    from django.db.backends.postgresql.psycopg_any import register_tzloader  # type: ignore[import-untyped]
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
    from django.db.backends.postgresql.base import ServerBindingCursor  # type: ignore[attr-defined]

    class PreparingCursor(ServerBindingCursor):  # type: ignore[misc]
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


def prepared_models(model: type[Model], where: str, params: Any, *, connection: Any = None) -> list[Any]:
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


def model_from_row(model: type[Model], values: Any, *, connection: Any = None) -> Any:
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
def _model_columns(model: type[Model]) -> tuple[list[str], list[tuple[int, tuple[Any, ...], Any]]]:
    """The attnames of `model`'s concrete fields in order, and (position, converters, column expression) of
    those that have database converters."""
    connection = default_connection
    table = model._meta.db_table
    converters = []
    concrete: list[Any] = list(model._meta.concrete_fields)
    for i, f in enumerate(concrete):
        col = f.get_col(table)
        chain = tuple(connection.ops.get_db_converters(col) + f.get_db_converters(connection))
        if chain:
            converters.append((i, chain, col))
    return [f.attname for f in model._meta.concrete_fields], converters


@functools.cache
def _select_all(model: type[Model], where: str) -> str:
    """The SELECT of every concrete column of `model` under `where`."""
    qn = default_connection.ops.quote_name
    columns = ", ".join(qn(f.column) for f in model._meta.concrete_fields)
    return f"SELECT {columns} FROM {qn(model._meta.db_table)} WHERE {where}"


# --- the kernel's statements ---------------------------------------------------------------------------------
# Everything below runs on PostgreSQL only unless it says otherwise; each caller keeps its ORM form for the other
# databases beside the call (the twin), and the tests run both.


def database_ping(connection: Any = None) -> None:
    """One round trip to the database (`SELECT 1`, any database); raises when it does not answer. Why raw:
    the health check asks the server, not a table."""
    connection = connection or connections[DEFAULT_DB_ALIAS]
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
        cursor.fetchone()


def server_setting(connection: Any, name: str) -> str:
    """The PostgreSQL server's run-time setting `name` (`current_setting`); no ORM form."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT current_setting(%s)", [name])
        return str(cursor.fetchone()[0])


def table_storage_set(schema_editor: Any, table: str, parameters: dict[str, str | int | float]) -> None:
    """`ALTER TABLE table SET (name = value, …)` (PostgreSQL storage parameters; no ORM form). `table` is
    quoted here; names and values are the migration's own constants."""
    pairs = ", ".join(f"{name} = {value}" for name, value in parameters.items())
    schema_editor.execute(f"ALTER TABLE {schema_editor.quote_name(table)} SET ({pairs})")


def table_storage_reset(schema_editor: Any, table: str, names: list[str]) -> None:
    """`ALTER TABLE table RESET (name, …)`: back to the server's defaults."""
    schema_editor.execute(f"ALTER TABLE {schema_editor.quote_name(table)} RESET ({', '.join(names)})")


def rate_bucket_take_ctes(*, key: str, now: str = "%(now)s") -> str:
    """The token bucket's refill-and-take (`owlat.ratelimit.take_token`) as the CTEs `old`, `calc` and `upd`
    (`calc.t`: tokens before the take, `upd.tokens`: after; none when the bucket row does not exist): lock,
    refill, take in one statement instead of the ORM twin's SELECT FOR UPDATE and UPDATE. `key` and `now` are
    SQL expressions; `%(capacity)s`, `%(rate)s` and `%(cost)s` are parameters."""
    return f"""old AS (
    SELECT tokens, updated_at FROM owlat_ratebucket WHERE key = {key} FOR UPDATE
), calc AS (
    SELECT LEAST(%(capacity)s, tokens + GREATEST(0, {now} - updated_at) * %(rate)s) AS t, updated_at FROM old
), upd AS (
    UPDATE owlat_ratebucket b
       SET tokens = CASE WHEN calc.t >= %(cost)s THEN calc.t - %(cost)s ELSE calc.t END,
           updated_at = GREATEST({now}, calc.updated_at)
      FROM calc
     WHERE b.key = {key}
 RETURNING b.tokens
)"""


_RATE_TAKE = f"WITH {rate_bucket_take_ctes(key='%(key)s')}\nSELECT calc.t, upd.tokens FROM calc, upd\n"


def rate_bucket_take(
    key: str, *, rate: float, capacity: float, now: float, cost: float
) -> tuple[float, float] | None:
    """(tokens before the take, tokens after) of bucket `key`, or None when its row does not exist yet."""
    params: dict[str, Any] = {"key": key, "capacity": capacity, "now": now, "rate": rate, "cost": cost}
    with connections[DEFAULT_DB_ALIAS].cursor() as cursor:
        cursor.execute(_RATE_TAKE, params)
        row = cursor.fetchone()
    return None if row is None else (float(row[0]), float(row[1]))


@functools.cache
def _api_key_select() -> str:
    """The active, unrevoked key row (every concrete column) for `%(hash)s`, unexpired at `%(now)s`."""
    from owlat.models import ApiKey

    qn = default_connection.ops.quote_name
    columns = ", ".join(qn(f.column) for f in ApiKey._meta.concrete_fields)
    return (
        f"SELECT {columns} FROM {ApiKey._meta.db_table} WHERE key_hash = %(hash)s AND is_active "
        "AND revoked_at IS NULL AND (expires_at IS NULL OR expires_at > %(now)s) ORDER BY id LIMIT 1"
    )


def api_key_row(key_hash: str, now: dt.datetime) -> tuple[Any, ...] | None:
    """The key row of `owlat.apikeys.api_key_authenticate` (its ORM twin: the filtered queryset). Why raw:
    every API request runs it, and the queryset's compilation was a third of the events API's CPU."""
    with connections[DEFAULT_DB_ALIAS].cursor() as cursor:
        cursor.execute(_api_key_select(), {"hash": key_hash, "now": now})
        row = cursor.fetchone()
    return None if row is None else tuple(row)


@functools.cache
def _api_key_take() -> str:
    return (
        f"WITH k AS ({_api_key_select()}), "
        + rate_bucket_take_ctes(key="%(prefix)s || (SELECT id::text FROM k)", now="%(epoch)s")
        + ", took AS (SELECT calc.t, upd.tokens FROM calc, upd) "
        "SELECT k.*, took.t, took.tokens FROM k LEFT JOIN took ON true"
    )


def api_key_row_and_take(params: dict[str, Any]) -> tuple[Any, ...] | None:
    """`api_key_row` and `rate_bucket_take` of the key's bucket (`%(prefix)s` + its id) in one prepared
    statement: the key's columns, then tokens before and after (both None when the bucket row does not exist).
    `params`: hash, now, prefix, capacity, epoch, rate, cost. Twin: the two calls."""
    with prepared_cursor() as cursor:
        cursor.execute(_api_key_take(), params)
        row = cursor.fetchone()
    return None if row is None else tuple(row)


def orm_broker_insert(db: Any, table: str, rows: list[tuple[Any, Any, Any]]) -> None:
    """django-q2's ORM broker rows `(key, payload, lock)` in one INSERT. Twin: `OrmQ` `bulk_create`. Why raw:
    `async_task` and the model save were a sixth of the events API's CPU for its one walker wake-up."""
    values = ", ".join(["(%s, %s, %s)"] * len(rows))
    with db.cursor() as cursor:
        cursor.execute(
            f"INSERT INTO {table} (key, payload, lock) VALUES {values}", [v for row in rows for v in row]
        )


@functools.cache
def compare_and_set_statement(
    model: type[Model], field: str, fields: tuple[str, ...], guarded: tuple[str, ...]
) -> str:
    """The runner's compare-and-set of one edge (`SetBasedRunner._compare_and_set`; twin: one conditional
    `filter(pk=…, state=frm, **guard).update(…)` per row): `UPDATE … FROM unnest(<one array per column>)
    RETURNING pk`, a text fixed per edge whatever the number of rows. Parameters: the new state, the arrays
    (primary keys, patched values, guarded values; JSON as text) and the from-state."""

    connection = default_connection
    meta = model._meta
    qn = connection.ops.quote_name
    table = qn(meta.db_table)
    pk: Any = meta.pk
    state: Any = meta.get_field(field)
    patched: list[Any] = [meta.get_field(name) for name in fields]
    guards: list[Any] = [meta.get_field(name) for name in guarded]

    def array_type(f: Any) -> str:
        return "text" if f.get_internal_type() == "JSONField" else str(f.cast_db_type(connection))

    def value(f: Any, alias: str) -> str:
        cast = "::jsonb" if f.get_internal_type() == "JSONField" else ""
        return f"v.{qn(alias)}{cast}"

    columns = [qn("pk_")] + [qn(f"p_{f.column}") for f in patched] + [qn(f"g_{f.column}") for f in guards]
    arrays = ", ".join(f"%s::{array_type(f)}[]" for f in [pk, *patched, *guards])
    assignments = ", ".join(
        [f"{qn(state.column)} = %s"] + [f"{qn(f.column)} = {value(f, f'p_{f.column}')}" for f in patched]
    )
    conditions = " AND ".join(
        [f"{table}.{qn(pk.column)} = v.{qn('pk_')}", f"{table}.{qn(state.column)} = %s"]
        + [f"{table}.{qn(f.column)} IS NOT DISTINCT FROM {value(f, f'g_{f.column}')}" for f in guards]
    )
    return (
        f"UPDATE {table} SET {assignments} FROM unnest({arrays}) AS v({', '.join(columns)}) "
        f"WHERE {conditions} RETURNING {table}.{qn(pk.column)}"
    )


def compare_and_set_run(statement: str, params: list[Any]) -> list[PrimaryKey]:
    """Run a `compare_and_set_statement` prepared; the primary keys it wrote, as the database returns them."""
    with prepared_cursor() as cursor:
        cursor.execute(statement, params)
        return [row[0] for row in cursor.fetchall()]


@functools.cache
def _sending_stat_upsert() -> str:
    from owlat.models import SendingStat
    from owlat.sending_stats import STAT_FIELDS

    table = SendingStat._meta.db_table
    counters = ", ".join(STAT_FIELDS)
    return (
        f"INSERT INTO {table} (id, organization_id, day, sender_domain, {counters}, updated_at) "
        f"VALUES (%s, %s::uuid, %s::date, %s, {', '.join(['%s'] * len(STAT_FIELDS))}, %s) "
        "ON CONFLICT (organization_id, day, sender_domain) DO UPDATE SET "
        + ", ".join(f"{name} = {table}.{name} + EXCLUDED.{name}" for name in STAT_FIELDS)
    )


def sending_stat_add(params: list[Any]) -> None:
    """The day's sending-stat row created with the deltas, or the deltas added to it, in one prepared `INSERT …
    ON CONFLICT DO UPDATE` (twin: `owlat.sending_stats`' UPDATE, then INSERT on a day's first use). Parameters:
    a new id, organization, day, sender domain, one delta per `STAT_FIELDS`, now."""
    with prepared_cursor() as cursor:
        cursor.execute(_sending_stat_upsert(), params)


def wake_ctes(table: str, broker_table: str, when: str) -> str:
    """`owlat.wakeups.wake_cte`'s data-modifying CTEs `wake_lock, wake_mark, wake`: a shared advisory lock
    (when `when` holds), the pending marker unless one is there, the broker row only for a new marker.
    Parameters: the two lock keys, func, queue, now, then the broker row's key, payload and lock."""
    return (
        "wake_lock AS (SELECT pg_advisory_xact_lock_shared(%s, %s) AS held WHERE " + when + "), "
        f"wake_mark AS (INSERT INTO {table} (func, queue, created_at) SELECT %s, %s, %s FROM wake_lock "
        "ON CONFLICT (func) DO NOTHING RETURNING func), "
        f"wake AS (INSERT INTO {broker_table} (key, payload, lock) "
        "SELECT %s, %s, %s::timestamptz FROM wake_mark)"
    )


def wake_mark_and_enqueue(ctes: str, params: list[Any]) -> bool:
    """Run `wake_ctes` on their own; whether a marker (and with it the broker row) was written."""
    with connections[DEFAULT_DB_ALIAS].cursor() as cursor:
        cursor.execute(f"WITH {ctes} SELECT count(*) FROM wake_mark", params)
        return bool(cursor.fetchone()[0])


def wake_mark(table: str, params: list[Any]) -> bool:
    """The pending marker alone, under the shared advisory lock (the task is enqueued by the caller: Redis);
    whether it was written. Parameters: the two lock keys, func, queue, now."""
    with connections[DEFAULT_DB_ALIAS].cursor() as cursor:
        cursor.execute(
            "WITH wake_lock AS (SELECT pg_advisory_xact_lock_shared(%s, %s)) "
            f"INSERT INTO {table} (func, queue, created_at) SELECT %s, %s, %s FROM wake_lock "
            "ON CONFLICT (func) DO NOTHING RETURNING func",
            params,
        )
        return cursor.fetchone() is not None


def wake_unmark(table: str, func: str, lock_keys: list[int]) -> bool:
    """Delete `func`'s marker after taking the exclusive advisory lock (so every transaction that relied on the
    marker has committed); whether one was there. No ORM form: the lock comes first, in the same statement."""
    with connections[DEFAULT_DB_ALIAS].cursor() as cursor:
        cursor.execute(
            f"DELETE FROM {table} WHERE func = "
            "(SELECT %s::varchar FROM (SELECT pg_advisory_xact_lock(%s, %s)) AS held)",
            [func, *lock_keys],
        )
        return cursor.rowcount > 0
