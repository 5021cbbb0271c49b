"""The events intake's PostgreSQL statements (issue 12: web and PostgreSQL CPU per event).

`event_record` (automations.services.events) writes an event for an existing contact, when all the runs it
opens start with a step 0 due at once (the batched walker woken by a broker row), as one statement outside any
transaction, atomic by being one statement:

- `intake_write`: after `contact_and_candidates`' read, the runs with their step 0, the counter deltas and the
  walker's wake-up (`automations.lifecycle.RunsOpening`), the event with their count and its activity;
- `intake_statement`: the read too (`automations.triggers.event_fanout_ctes`), writing only when that is the
  whole intake (`ok.go`) and otherwise nothing, so the caller falls back to the read and the other paths.

Both write what `fire_trigger` and `_event_insert` write in the general path (its own transaction).
"""

from __future__ import annotations

import json
from typing import Any

from django.db import connection
from django.utils import timezone

from owlat.sql import prepared_cursor


def one_statement_possible() -> bool:
    """PostgreSQL, and the fan-out the only trigger listener (another would be left out)."""
    from automations.triggers import automation_fanout
    from owlat.registry import trigger_listeners

    return connection.vendor == "postgresql" and trigger_listeners() == (automation_fanout,)


def intake_write(
    *,
    organization_id: Any,
    contact_id: Any,
    event_name: str,
    event_properties: dict[str, Any] | None,
    data: dict[str, Any],
    candidates: list[Any],
) -> tuple[str, int] | None:
    """The intake's writes after the read, as one statement: (event id, runs opened), or None (nothing written)
    when that is not the whole of it: a run whose step 0 is delayed or missing (a due task or the start task
    follows), or a wake-up that is not a broker row (Redis, sync mode)."""
    from automations.lifecycle import RunsOpening
    from automations.triggers import fanout_items
    from automations.walker_batch import WALK_TASK
    from owlat.registry import TriggerEvent

    now = timezone.now()
    event = TriggerEvent("event_received", str(organization_id), str(contact_id), data)
    items = fanout_items(event, candidates, now=now)
    if any(step is None or due is not None for *_, step, due in items):
        return None
    opening = RunsOpening(items, at=now, wake=WALK_TASK) if items else None
    if opening is not None and not opening.wakes:
        return None
    event_id, event_sql, activity_sql, params = event_insert_sql(
        organization_id=organization_id,
        contact_id=contact_id,
        event_name=event_name,
        event_properties=event_properties,
        triggered="(SELECT count(*) FROM run)" if opening else 0,
        at=now,
    )
    if opening is None:
        with prepared_cursor() as cursor:
            cursor.execute(f"WITH {event_sql} {activity_sql}", params)
        return event_id, 0
    with prepared_cursor() if opening.preparable else connection.cursor() as cursor:
        cursor.execute(
            f"WITH {opening.ctes}, {event_sql} {activity_sql} RETURNING (SELECT count(*) FROM run)",
            [*opening.params, *params],
        )
        (triggered,) = cursor.fetchone()
    return event_id, triggered


def intake_statement(
    *, organization_id: Any, email: str, event_name: str, event_properties: dict[str, Any] | None, data: dict
) -> tuple[str | None, Any, int] | None:
    """The read and the writes as one statement: (event id or None when nothing was written, the contact's id or
    None when there is no such contact, runs opened). Nothing is written unless the contact exists and every
    run to open starts with a step 0 due at once. None (not run) when the wake-up is not a broker row."""
    from automations.lifecycle import opening_ctes
    from automations.triggers import event_fanout_ctes
    from automations.walker_batch import WALK_TASK

    now = timezone.now()
    fanout, fanout_params, runs, runs_params = event_fanout_ctes(
        organization_id=organization_id, email=email, event_name=event_name, data=data
    )
    opening, opening_params, wakes = opening_ctes(runs, runs_params, at=now, wake=WALK_TASK)
    if not wakes:
        return None
    event_id, event_sql, activity_sql, event_params = event_insert_sql(
        organization_id=organization_id,
        contact_id=None,
        event_name=event_name,
        event_properties=event_properties,
        triggered="(SELECT count(*) FROM run)",
        at=now,
        contact_sql="c.id",
        source=" FROM c, ok WHERE ok.go",
    )
    sql = (
        f"WITH {fanout}, {opening}, {event_sql}, activity AS ({activity_sql}) "
        "SELECT ok.go, (SELECT id FROM c), (SELECT count(*) FROM run) FROM ok"
    )
    with prepared_cursor() as cursor:
        cursor.execute(sql, [*fanout_params, *opening_params, *event_params])
        go, contact_id, triggered = cursor.fetchone()
    return (event_id if go else None), contact_id, triggered


def event_insert_sql(
    *,
    organization_id: Any,
    contact_id: Any,
    event_name: str,
    event_properties: Any,
    triggered: int | str,
    at: Any,
    contact_sql: str | None = None,
    source: str = "",
) -> tuple[str, str, str, list[Any]]:
    """The new event's id, its row as the CTE `event` and its activity's INSERT (PostgreSQL), with their
    parameters. `triggered`: the count, or an SQL expression giving it; `contact_sql` (then `contact_id` is not
    used): an SQL expression giving the contact's id, over `source` (`" FROM …"`: written when that gives a
    row)."""
    from automations.services.events import new_event_id
    from owlat.activities import activity_insert_sql
    from owlat.models import Event

    event_id = new_event_id()
    count = "%s" if isinstance(triggered, int) else triggered
    event = (
        f"event AS (INSERT INTO {Event._meta.db_table} "
        "(id, organization_id, contact_id, event_name, properties, triggered_automations, created_at) "
        f"SELECT %s::varchar, %s::uuid, {contact_sql or '%s::uuid'}, %s::varchar, %s::jsonb, {count}, "
        f"%s::timestamptz{source})"
    )
    params = [event_id, str(organization_id)]
    if contact_sql is None:
        params.append(str(contact_id))
    params += [event_name, None if event_properties is None else json.dumps(event_properties)]
    params += [triggered, at] if isinstance(triggered, int) else [at]
    activity, activity_params = activity_insert_sql(
        organization_id=organization_id,
        contact_id=contact_id,
        activity_type="event_received",
        metadata={"eventId": event_id, "eventName": event_name, "eventProperties": event_properties},
        at=at,
        contact_sql=contact_sql,
        source=source,
    )
    return event_id, event, activity, [*params, *activity_params]
