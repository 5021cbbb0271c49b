"""The inbox's raw SQL: the walker's hot statements written out, as server-side prepared statements on PostgreSQL.

Every step task reads its action with the message, the contact and the agent configuration, locks the message
for its routing, claims and completes its action and inserts the next step's row. Built by the ORM, each of
these statements was compiled again per call (a joined select of four models is ~150 columns to compile) and
parsed and planned again by PostgreSQL; here the text is built once per process from the models' fields and
runs prepared (`owlat.sql.prepared_cursor`). The rows are built as the ORM builds them (`owlat.sql.model_from_row`;
joined rows cached as `select_related` caches them).

PostgreSQL only: each caller keeps the ORM statement it replaces for other databases (`enabled()`); both are
run by `inbox/tests/test_sql.py`.
"""

from __future__ import annotations

import functools
import uuid
from typing import Any

from django.db import connection
from django.db.models import Model

from inbox.models import (
    AgentAction,
    AgentConfig,
    CircuitBreaker,
    HandlingRule,
    InboundMessage,
    KnowledgeEntry,
)
from inbox.models import ProcessingStatus as P
from owlat.models import Contact, ContactActivity, OrganizationSettings
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


# --- the statements, each beside the ORM expression its caller keeps for other databases -----------------------

#: the fields `action_prepare` inserts
ACTION_INSERT_FIELDS = tuple(f.attname for f in AgentAction._meta.concrete_fields)
#: what a breaker observation may change on its row (besides `updated_at`)
BREAKER_OBSERVED = ("opened_at", "closes_at", "reason", "trip_count", "samples")
RULE_COLUMNS = ("id", "name", "match", "value", "action", "category")


def column(model: type[Model], attname: str) -> str:
    """The quoted column of a model's field."""
    return connection.ops.quote_name(fields_by_attname(model)[attname].column)


@functools.cache
def action_insert_sql() -> str:
    """`AgentAction.objects.create(…)`: every concrete field, in `ACTION_INSERT_FIELDS` order."""
    columns = ", ".join(column(AgentAction, a) for a in ACTION_INSERT_FIELDS)
    values = ", ".join(cast(AgentAction, a) for a in ACTION_INSERT_FIELDS)
    return f"INSERT INTO {table(AgentAction)} ({columns}) VALUES ({values})"


@functools.lru_cache(maxsize=32)
def message_record_sql(names: tuple[str, ...]) -> str:
    """`InboundMessage.objects.filter(pk=…, processing_status=…).update(<names>, updated_at=…)`."""
    qn = connection.ops.quote_name
    sets = ", ".join(f"{column(InboundMessage, n)} = {cast(InboundMessage, n)}" for n in names)
    return (
        f"UPDATE {table(InboundMessage)} SET {sets}, {qn('updated_at')} = %s "
        f"WHERE id = %s::uuid AND {qn('processing_status')} = %s"
    )


@functools.cache
def rules_sql() -> str:
    """The organization's active handling rules, `RULE_COLUMNS`, in order."""
    return (
        f"SELECT {', '.join(RULE_COLUMNS)} FROM {table(HandlingRule)} "
        "WHERE organization_id = %s::uuid AND is_active ORDER BY position ASC, name ASC"
    )


@functools.cache
def recent_activities_sql() -> str:
    """A contact's five latest activities (type, time), newest first."""
    return (
        f"SELECT activity_type, occurred_at FROM {table(ContactActivity)} "
        "WHERE contact_id = %s::uuid AND organization_id = %s::uuid ORDER BY occurred_at DESC LIMIT 5"
    )


@functools.cache
def thread_history_sql() -> str:
    """The thread's five latest other messages of the contact, none quarantined, newest first."""
    return (
        f"SELECT {select_list('m', InboundMessage)} FROM {table(InboundMessage)} AS m "
        "WHERE m.thread_id = %s::uuid AND m.organization_id = %s::uuid AND m.contact_id = %s::uuid "
        f"AND NOT (m.id = %s::uuid) AND m.processing_status <> '{P.QUARANTINED.value}' "
        "ORDER BY m.received_at DESC LIMIT 5"
    )


@functools.cache
def breaker_open_sql() -> str:
    """`open_breakers_qs(organization_id, now).first()`."""
    return (
        f"SELECT {select_list('b', CircuitBreaker)} FROM {table(CircuitBreaker)} AS b "
        "WHERE b.opened_at IS NOT NULL AND (b.closes_at IS NULL OR b.closes_at > %s) "
        "AND b.organization_id = %s::uuid ORDER BY b.kind ASC LIMIT 1"
    )


@functools.cache
def breaker_locked_sql() -> str:
    """The organization's breaker of one kind, locked (`select_for_update().filter(…).first()`)."""
    return (
        f"SELECT {select_list('b', CircuitBreaker)} FROM {table(CircuitBreaker)} AS b "
        "WHERE b.organization_id = %s::uuid AND b.kind = %s ORDER BY b.id ASC LIMIT 1 FOR UPDATE"
    )


@functools.cache
def breaker_save_sql() -> str:
    """`row.save()` after an observation: `BREAKER_OBSERVED` and `updated_at`."""
    sets = ", ".join(f"{name} = {cast(CircuitBreaker, name)}" for name in BREAKER_OBSERVED)
    return (
        f"UPDATE {table(CircuitBreaker)} SET {sets}, updated_at = %s WHERE id = {cast(CircuitBreaker, 'id')}"
    )


#: `inbox.knowledge.knowledge_vector()` as SQL on the alias `k`, constants written in (as the GIN index
#: `knowledge_search` has them, so the `@@` reads the index with a prepared statement's generic plan too)
KNOWLEDGE_DOCUMENT = (
    "(setweight(to_tsvector('simple'::regconfig, COALESCE(k.\"title\", '')), 'A') || "
    "setweight(to_tsvector('simple'::regconfig, COALESCE(k.\"content\", '')), 'B'))"
)


@functools.cache
def knowledge_search_sql() -> str:
    """The organization's entries matching a raw tsquery, ranked, with the rank as the last column."""
    return (
        f"SELECT {select_list('k', KnowledgeEntry)}, "
        f"ts_rank({KNOWLEDGE_DOCUMENT}, to_tsquery('simple'::regconfig, %s)) AS rank "
        f"FROM {table(KnowledgeEntry)} AS k WHERE k.organization_id = %s::uuid "
        "AND (%s::boolean OR NOT k.is_internal) "
        f"AND {KNOWLEDGE_DOCUMENT} @@ to_tsquery('simple'::regconfig, %s) ORDER BY rank DESC, k.title ASC LIMIT %s"
    )


def message_columns(with_flags: bool = False) -> str:
    """The message (m), its contact (c), the agent configuration (g) and with `with_flags` the settings row's
    flags (s), as `inbox.walker._built` reads them."""
    columns = [
        select_list("m", InboundMessage),
        select_list("c", Contact),
        select_list("g", AgentConfig),
    ]
    if with_flags:
        columns.append("s.id, s.feature_flags")
    return ", ".join(columns)


def message_joins(with_flags: bool = False) -> str:
    joins = (
        f"LEFT JOIN {table(Contact)} AS c ON c.id = m.contact_id "
        f"LEFT JOIN {table(AgentConfig)} AS g ON g.organization_id = m.organization_id"
    )
    if with_flags:
        joins += f" LEFT JOIN {table(OrganizationSettings)} AS s ON s.organization_id = m.organization_id"
    return joins


@functools.cache
def walker_start_sql() -> str:
    """The step walker's start: the message locked, with `message_columns(True)` and a pending-action test."""
    actions = table(AgentAction)
    return (
        f"SELECT {message_columns(True)}, EXISTS (SELECT 1 FROM {actions} AS p WHERE "
        f"p.inbound_message_id = m.id AND p.status = %s) "
        f"FROM {table(InboundMessage)} AS m {message_joins(True)} "
        "WHERE m.id = %s::uuid FOR UPDATE OF m"
    )


@functools.cache
def walker_step_sql() -> str:
    """A step's action with `message_columns()` and whether the message has another pending action."""
    actions = table(AgentAction)
    return (
        f"SELECT {select_list('a', AgentAction)}, {message_columns()}, EXISTS (SELECT 1 FROM {actions} "
        "AS p WHERE p.inbound_message_id = a.inbound_message_id AND p.status = %s AND p.id <> a.id) "
        f"FROM {actions} AS a JOIN {table(InboundMessage)} AS m ON m.id = a.inbound_message_id "
        f"{message_joins()} WHERE a.id = %s::uuid AND a.inbound_message_id = %s::uuid"
    )


@functools.cache
def message_lock_sql() -> str:
    """`InboundMessage.objects.select_for_update().filter(pk=…).first()`."""
    return (
        f"SELECT {select_list('m', InboundMessage)} FROM {table(InboundMessage)} AS m "
        "WHERE m.id = %s::uuid FOR UPDATE"
    )


@functools.cache
def config_lock_sql() -> str:
    """`AgentConfig.objects.select_for_update().get(pk=…)`."""
    return (
        f"SELECT {select_list('g', AgentConfig)} FROM {table(AgentConfig)} AS g "
        f"WHERE g.id = {cast(AgentConfig, 'id')} FOR UPDATE"
    )
