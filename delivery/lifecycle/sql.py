"""The send lifecycle's hand-written statements (PostgreSQL), each with its reason; the caller in
`delivery/lifecycle/claims.py` or `effects.py` runs the ORM twin on the other databases. The claim statements
take rows with `FOR UPDATE SKIP LOCKED` so concurrent claimers skip each other's rows instead of waiting (the
ORM cannot express `UPDATE … WHERE id = ANY(ARRAY(SELECT … SKIP LOCKED)) RETURNING`). Values are bound as
parameters; table and column names come from the models' `_meta`. None of them writes `status`.
"""

from __future__ import annotations

import datetime as dt
import json
import uuid
from typing import Any

from django.db import connection, transaction

_CLAIMABLE_GIVEN = (
    "id = ANY(%s) AND status = 'queued' AND handed_off_at IS NULL AND deleted_at IS NULL "
    "AND (claimed_at IS NULL OR claimed_at < %s OR claim_token = %s) "
    "AND (not_before IS NULL OR not_before <= %s)"
)
_CLAIMABLE_QUEUED = (
    "status = 'queued' AND NOT (id = ANY(%s)) AND handed_off_at IS NULL AND deleted_at IS NULL "
    "AND outcome_unknown = false AND (claimed_at IS NULL OR claimed_at < %s) AND queued_at <= %s "
    "AND (not_before IS NULL OR not_before <= %s)"
)
_CLAIM_SET = "claimed_at = %s, claim_token = %s, dispatch_attempts = dispatch_attempts + 1"


def _table(model: type) -> str:
    return str(connection.ops.quote_name(model._meta.db_table))  # type: ignore[attr-defined]


def claim_given(
    model: type,
    ids: list[uuid.UUID],
    *,
    now: dt.datetime,
    token: uuid.UUID,
    expired: dt.datetime,
    retry_token: uuid.UUID | None,
) -> list[str]:
    """`claims.claim_sends` (twin: a conditional `update()` under SQLite's serialized writers)."""
    table = _table(model)
    sql = (
        f"UPDATE {table} SET {_CLAIM_SET} WHERE id = ANY(ARRAY(SELECT id FROM {table} "
        f"WHERE {_CLAIMABLE_GIVEN} ORDER BY id FOR UPDATE SKIP LOCKED)) RETURNING id"
    )
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(sql, [now, token, ids, expired, retry_token, now])
        return [str(row[0]) for row in cursor.fetchall()]


def claim_given_and_queued(
    model: type,
    ids: list[uuid.UUID],
    *,
    more: int,
    now: dt.datetime,
    token: uuid.UUID,
    expired: dt.datetime,
    retry_token: uuid.UUID | None,
) -> list[tuple[Any, bool]]:
    """`claims.claim_sends_topped_up` (PostgreSQL only; elsewhere its caller claims in two steps): the given
    rows and up to `more` other queued rows in one statement; returns (id, was given)."""
    table = _table(model)
    sql = (
        f"WITH own AS (SELECT id FROM {table} WHERE {_CLAIMABLE_GIVEN} ORDER BY id FOR UPDATE SKIP LOCKED), "
        f"more AS (SELECT id FROM {table} WHERE {_CLAIMABLE_QUEUED} "
        "ORDER BY queued_at LIMIT %s FOR UPDATE SKIP LOCKED) "
        f"UPDATE {table} SET {_CLAIM_SET} "
        "WHERE id IN (SELECT id FROM own UNION ALL SELECT id FROM more) RETURNING id, id = ANY(%s)"
    )
    params = [ids, expired, retry_token, now, ids, expired, now, now, max(0, more), now, token, ids]
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(sql, params)
        return [(pk, bool(given)) for pk, given in cursor.fetchall()]


def claim_queued(
    model: type,
    *,
    limit: int,
    skip: list[uuid.UUID],
    now: dt.datetime,
    token: uuid.UUID,
    expired: dt.datetime,
) -> list[str]:
    """`claims.claim_queued` (twin: select the candidates, then a conditional `update()`)."""
    table = _table(model)
    sql = (
        f"UPDATE {table} SET {_CLAIM_SET} WHERE id = ANY(ARRAY(SELECT id FROM {table} "
        f"WHERE {_CLAIMABLE_QUEUED} ORDER BY queued_at LIMIT %s FOR UPDATE SKIP LOCKED)) RETURNING id"
    )
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(sql, [now, token, skip, expired, now, now, limit])
        return [str(row[0]) for row in cursor.fetchall()]


def mark_handed_off(
    model: type,
    pk: uuid.UUID,
    token: uuid.UUID,
    *,
    at: dt.datetime,
    message_id: str,
    open_tracked: bool | None,
) -> bool:
    """`claims.mark_handed_off` (twin: `update()`): one statement per message on the wire, written without
    the ORM's per-call query compilation."""
    sql = (
        f"UPDATE {_table(model)} SET handed_off_at = %s, message_id = %s, open_tracked = %s "
        "WHERE id = %s AND claim_token = %s AND handed_off_at IS NULL AND status = 'queued'"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, [at, message_id, open_tracked, pk, token])
        return bool(cursor.rowcount == 1)


def mark_handed_off_many(
    model: type, items: list[tuple[str, str]], token: uuid.UUID, *, at: dt.datetime
) -> set[str]:
    """`claims.mark_handed_off_many` (twin: one `update()` per row): (send id, message id) pairs in one
    statement through `unnest`; returns the ids still held by `token`."""
    sql = (
        f"UPDATE {_table(model)} AS s SET handed_off_at = %s, message_id = v.message_id "
        "FROM unnest(%s::uuid[], %s::text[]) AS v(id, message_id) "
        "WHERE s.id = v.id AND s.claim_token = %s AND s.handed_off_at IS NULL AND s.status = 'queued' "
        "RETURNING s.id"
    )
    ids = [uuid.UUID(str(pk)) for pk, _ in items]
    with connection.cursor() as cursor:
        cursor.execute(sql, [at, ids, [message_id for _, message_id in items], token])
        return {str(row[0]) for row in cursor.fetchall()}


def activities_insert(rows: list[tuple[Any, Any, str, dict[str, Any], dt.datetime]]) -> None:
    """`effects._insert_activities` (twin: `bulk_create`): timeline rows (organization, contact, type,
    metadata, time) as one JSON document the server expands (`jsonb_to_recordset`); building a model
    instance per row and binding six parameters each cost more than the dispatch of a message."""
    from owlat.models import ContactActivity

    meta = ContactActivity._meta
    qn = connection.ops.quote_name
    column = {f.name: qn(f.column) for f in meta.concrete_fields}
    document = json.dumps(
        [
            {"o": str(org), "c": str(contact), "k": kind, "m": metadata, "t": at.isoformat()}
            for org, contact, kind, metadata, at in rows
        ]
    )
    sql = (
        f"INSERT INTO {qn(meta.db_table)} ({column['id']}, {column['organization']}, {column['contact']}, "
        f"{column['activity_type']}, {column['metadata']}, {column['occurred_at']}) "
        "SELECT gen_random_uuid(), r.o, r.c, r.k, r.m, r.t "
        "FROM jsonb_to_recordset(%s::jsonb) AS r(o uuid, c uuid, k text, m jsonb, t timestamptz)"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, [document])
