"""The delivery app's hand-written statements (PostgreSQL), each with its reason and the ORM twin its caller
runs on the other databases. The send lifecycle's claim and hand-off statements are in
`delivery/lifecycle/sql.py`. Values are bound as parameters; table and column names come from the models' `_meta`.
"""

from __future__ import annotations

import functools
import json
import uuid
from typing import Any

from django.db import connection

from delivery.models import EmailSend, TransactionalSend


@functools.cache
def _send_columns() -> list[tuple[Any, str, str, bool]]:
    """(field, column type, type the parameter is sent as, is JSON) of each column of a send row."""
    out = []
    for f in TransactionalSend._meta.concrete_fields:
        db_type = (f.db_type(connection) or "").split("(")[0]
        is_json = f.get_internal_type() == "JSONField"
        out.append((f, db_type, "text" if is_json else db_type, is_json))
    return out


def transactional_sends_insert(rows: list[Any]) -> None:
    """`delivery.services.automation.automation_email_insert_many` on PostgreSQL (twin: `bulk_create`): the
    rows in one `INSERT … SELECT` by column: a column whose value is the same in every row
    (most of a fresh send row: the organization, template, sender, the empty tracking fields) is one
    parameter, the others one array each through `unnest` (`bulk_create` prepares and binds all 44
    values of every row one by one, a third of the walker's CPU per email step). Each value goes through its
    field's `get_db_prep_save` as `bulk_create` would; JSON as text cast to jsonb."""
    fields = _send_columns()
    qn = connection.ops.quote_name
    selects: list[str] = []
    unnested: list[str] = []
    params: list[Any] = []
    arrays: list[Any] = []
    for f, db_type, source_type, is_json in fields:
        values = [getattr(row, f.attname) for row in rows]
        first = values[0]
        constant = not f.primary_key and all(v == first for v in values)
        if is_json:
            prep = [
                None if v is None else json.dumps(v, cls=f.encoder) for v in values[: 1 if constant else None]
            ]
        else:
            prep = [f.get_db_prep_save(v, connection) for v in values[: 1 if constant else None]]
        if constant:
            cast = f"::{source_type}" if source_type == db_type else f"::{source_type}::{db_type}"
            selects.append(f"%s{cast}")
            params.append(prep[0])
        else:
            unnested.append(f"%s::{source_type}[]")
            arrays.append(prep)
            selects.append(f"u.c{len(unnested)}::{db_type}")
    columns = ", ".join(qn(f.column) for f, _, _, _ in fields)
    names = ", ".join(f"c{i}" for i in range(1, len(unnested) + 1))
    sql = (
        f"INSERT INTO {qn(TransactionalSend._meta.db_table)} ({columns}) SELECT {', '.join(selects)} "
        f"FROM unnest({', '.join(unnested)}) AS u({names})"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, [*params, *arrays])  # the SELECT list's placeholders come before FROM's
    for row in rows:
        row._state.adding = False
        row._state.db = "default"


def campaign_sends_insert(
    organization_id: Any,
    campaign_id: uuid.UUID,
    rows: list[tuple[Any, ...]],
    now: Any,
    row_fields: tuple[str, ...],
) -> dict[str, str]:
    """A page of campaign send rows (`delivery.services.campaigns`' `create_batch` on PostgreSQL; twin:
    `_insert_rows_orm`), contact id → send id of the rows written; `rows` are tuples of `row_fields`. One `INSERT … SELECT … FROM json_array_elements(<the page as one JSON array of row arrays>)`; the id is
    PostgreSQL's `gen_random_uuid()` (a version-4 UUID, as `uuid.uuid4` would give); every other column is the
    model field's default (or the batch's organization, campaign and `queued_at`), so the row is what
    `EmailSend(...)` would have saved. The page travels as one JSON text parameter (encoded by the C JSON encoder;
    psycopg's per-element array dumping cost more than the insert itself), bound server-side: nothing is quoted
    into the SQL, and each value is cast to its column's type by PostgreSQL."""
    import psycopg

    constants = {"organization_id": organization_id, "campaign_id": campaign_id, "queued_at": now}
    positions = {name: i for i, name in enumerate(row_fields)}
    columns: list[str] = []
    selects: list[str] = []
    params: list[Any] = []
    for field in EmailSend._meta.concrete_fields:
        db_type = field.db_type(connection)
        columns.append(connection.ops.quote_name(field.column))
        if field.attname == "id":
            selects.append("gen_random_uuid()")
            continue
        if field.attname in positions:
            selects.append(f"(v.r->>{positions[field.attname]})::{db_type}")
            continue
        value = constants[field.attname] if field.attname in constants else field.get_default()
        selects.append(f"%s::{db_type}")
        params.append(field.get_db_prep_save(value, connection))
    params.append(json.dumps(rows, default=str, ensure_ascii=False))
    sql = (
        f"INSERT INTO {connection.ops.quote_name(EmailSend._meta.db_table)} ({', '.join(columns)}) "
        f"SELECT {', '.join(selects)} FROM json_array_elements(%s::json) AS v(r) "
        "ON CONFLICT (campaign_id, contact_id) DO NOTHING RETURNING id::text, contact_id::text"
    )
    connection.ensure_connection()
    with psycopg.Cursor(connection.connection) as cursor:
        cursor.execute(sql, params)
        return {contact_id: send_id for send_id, contact_id in cursor.fetchall()}
