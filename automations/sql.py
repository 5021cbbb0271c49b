"""The automations app's hand-written statements, each with its reason and its SQLite twin where it has one.

Raw SQL lives here (and in `owlat.sql` for the kernel): everywhere else the ORM, which `owlat/tests/
test_raw_sql_contained.py` enforces. Values are bound as parameters; table names come from the models' `_meta`.
"""

from __future__ import annotations

import datetime as dt
import json
import uuid
from typing import Any

from django.db import connection, transaction


def event_insert(
    *,
    organization_id: Any,
    contact_id: Any,
    event_name: str,
    event_properties: Any,
    triggered: int,
    at: dt.datetime,
) -> str:
    """The event row (D-14) with its `event_received` activity (DOM-11); returns the event's id. Why raw: one
    PostgreSQL statement (a data-modifying CTE) instead of two INSERTs on the events API's hot path. SQLite
    twin: the ORM's two `create`s (`activity_record`)."""
    from automations.services.events import new_event_id
    from owlat.activities import activity_record
    from owlat.models import ContactActivity, Event
    from owlat.sql import prepared_cursor

    event_id = new_event_id()
    metadata = {"eventId": event_id, "eventName": event_name, "eventProperties": event_properties}
    if connection.vendor != "postgresql":
        Event.objects.create(
            id=event_id,
            organization_id=organization_id,
            contact_id=contact_id,
            event_name=event_name,
            properties=event_properties,
            triggered_automations=triggered,
        )
        activity_record(
            organization_id=organization_id,
            contact_id=contact_id,
            activity_type="event_received",
            metadata=metadata,
            at=at,
        )
        return event_id
    sql = (
        f"WITH event AS (INSERT INTO {Event._meta.db_table} "
        "(id, organization_id, contact_id, event_name, properties, triggered_automations, created_at) "
        "SELECT %s::varchar, %s::uuid, %s::uuid, %s::varchar, %s::jsonb, %s, %s::timestamptz) "
        f"INSERT INTO {ContactActivity._meta.db_table} "
        "(id, organization_id, contact_id, activity_type, metadata, occurred_at) "
        "SELECT %s::uuid, %s::uuid, %s::uuid, %s::varchar, %s::jsonb, %s::timestamptz"
    )
    org, contact = str(organization_id), str(contact_id)
    properties = None if event_properties is None else json.dumps(event_properties)
    params = [event_id, org, contact, event_name, properties, triggered, at]
    params += [str(uuid.uuid4()), org, contact, "event_received", json.dumps(metadata), at]
    with prepared_cursor() as cursor:
        cursor.execute(sql, params)
    return event_id


def counter_deltas_insert(column: str, rows: list[tuple[Any, str, int]]) -> None:
    """The counter deltas (id in `column`, field, delta) in one fixed `INSERT … SELECT FROM unnest` (twin:
    `bulk_create`). Why raw: the walker writes these in every batch; two texts (by column), prepared once per
    connection."""
    from automations.models import AutomationCounterDelta
    from owlat.sql import prepared_cursor

    table = AutomationCounterDelta._meta.db_table
    with prepared_cursor() as cursor:
        cursor.execute(
            f"INSERT INTO {table} ({column}, field, delta) "
            "SELECT * FROM unnest(%s::uuid[], %s::varchar[], %s::integer[])",
            [[str(pk) for pk, _, _ in rows], [name for _, name, _ in rows], [delta for _, _, delta in rows]],
        )


def _sums(fields: dict[str, str]) -> str:
    return ", ".join(
        f"COALESCE(SUM(delta) FILTER (WHERE field = '{name}'), 0) AS {column}"
        for name, column in fields.items()
    )


def _assign(fields: dict[str, str], source: str) -> str:
    return ", ".join(f"{column} = GREATEST(t.{column} + {source}.{column}, 0)" for column in fields.values())


def counters_fold(
    *,
    lock: int,
    wait: bool,
    automation_ids: list[str] | None,
    run_fields: dict[str, str],
    step_fields: dict[str, str],
) -> int:
    """`automations.counters.counters_rollup` in one transaction: the advisory lock `lock` (waited for, or 0
    at once when another roll-up holds it and not `wait`), then one statement whose `DELETE … RETURNING` feeds
    the two UPDATEs, so each delta is applied exactly once; returns how many deltas it applied. Why raw: a
    data-modifying CTE (twin: `_rollup_serialized` where writers are serialized)."""
    from automations.models import Automation, AutomationCounterDelta, AutomationStep

    step_table = AutomationStep._meta.db_table
    params: list[Any] = []
    where = ""
    if automation_ids is not None:
        where = (
            "WHERE automation_id = ANY(%s::uuid[]) OR step_id IN "
            f"(SELECT id FROM {step_table} WHERE automation_id = ANY(%s::uuid[]))"
        )
        params = [automation_ids, automation_ids]
    statement = f"""
        WITH d AS (DELETE FROM {AutomationCounterDelta._meta.db_table} {where}
                   RETURNING automation_id, step_id, field, delta),
        a AS (SELECT automation_id, {_sums(run_fields)} FROM d
              WHERE automation_id IS NOT NULL GROUP BY automation_id),
        ua AS (UPDATE {Automation._meta.db_table} t SET {_assign(run_fields, "a")}, stats_updated_at = now()
               FROM a WHERE t.id = a.automation_id RETURNING 1),
        s AS (SELECT step_id, {_sums(step_fields)} FROM d WHERE step_id IS NOT NULL GROUP BY step_id),
        us AS (UPDATE {step_table} t SET {_assign(step_fields, "s")} FROM s WHERE t.id = s.step_id RETURNING 1)
        SELECT (SELECT count(*) FROM d), (SELECT count(*) FROM ua), (SELECT count(*) FROM us)
    """
    with transaction.atomic(), connection.cursor() as cursor:
        if wait:
            cursor.execute("SELECT pg_advisory_xact_lock(%s)", [lock])
        else:
            cursor.execute("SELECT pg_try_advisory_xact_lock(%s)", [lock])
            if not cursor.fetchone()[0]:
                return 0
        cursor.execute(statement, params)
        return int(cursor.fetchone()[0])


# The statuses are written into the text, not bound: the events API runs `contact_and_candidate_rows` prepared,
# and only a constant lets PostgreSQL's generic plan use the partial unique index of running runs
# (automation, contact) instead of every running run of the automation.
_CANDIDATES_SELECT = """
    {contact_column}a.id, a.organization_id, a.trigger_config,
           EXISTS (SELECT 1 FROM {step} s WHERE s.automation_id = a.id),
           EXISTS (SELECT 1 FROM {run} r
                   WHERE r.automation_id = a.id AND r.contact_id = {contact} AND r.status = '{running}'),
           s0.id, s0.step_type, s0.config
"""


def _candidates_select(*, contact_column: str, contact: str) -> tuple[str, dict[str, str]]:
    from automations.models import Automation, AutomationRun, AutomationStep, RunStatus

    tables = {
        "automation": Automation._meta.db_table,
        "step": AutomationStep._meta.db_table,
        "run": AutomationRun._meta.db_table,
    }
    select = _CANDIDATES_SELECT.format(
        contact_column=contact_column, contact=contact, running=RunStatus.RUNNING.value, **tables
    )
    return select, tables


def candidate_rows(*, contact_id: Any, organization_id: Any, kind: str) -> list[tuple[Any, ...]]:
    """`automations.triggers._candidates`' rows: the organization's active automations of trigger `kind`, with
    whether each has steps and a running run of the contact, and its step 0. Portable, both databases run it;
    why raw: it runs inside every API call that fires a trigger, and the two annotated querysets it replaces
    cost a quarter of the events API's CPU to compile. Ids as the fields prepare them."""
    from automations.models import AutomationStatus

    select, tables = _candidates_select(contact_column="", contact="%s")
    statement = f"""
        SELECT {select}
        FROM {tables["automation"]} a
        LEFT JOIN {tables["step"]} s0 ON s0.automation_id = a.id AND s0.step_index = 0
        WHERE a.organization_id = %s AND a.status = '{AutomationStatus.ACTIVE.value}' AND a.trigger_type = %s
    """
    with connection.cursor() as cursor:
        cursor.execute(statement, [contact_id, organization_id, kind])
        return cursor.fetchall()


def contact_and_candidate_rows(*, organization_id: Any, email: str, kind: str) -> list[tuple[Any, ...]]:
    """The organization's live contact with `email` (lowest id) and, per row, `candidate_rows`' columns for it
    (none when there is no such contact), one prepared statement. Portable; why raw: the events API's path."""
    from automations.models import AutomationStatus
    from owlat.models import Contact
    from owlat.sql import prepared_cursor

    select, tables = _candidates_select(contact_column="c.id, ", contact="c.id")
    statement = f"""
        WITH c AS (
            SELECT id FROM {Contact._meta.db_table}
            WHERE organization_id = %s AND email = %s AND deleted_at IS NULL ORDER BY id LIMIT 1
        )
        SELECT {select}
        FROM c LEFT JOIN ({tables["automation"]} a
                          LEFT JOIN {tables["step"]} s0 ON s0.automation_id = a.id AND s0.step_index = 0)
               ON a.organization_id = %s AND a.status = '{AutomationStatus.ACTIVE.value}' AND a.trigger_type = %s
    """
    with prepared_cursor() as cursor:
        cursor.execute(statement, [organization_id, email, organization_id, kind])
        return cursor.fetchall()
