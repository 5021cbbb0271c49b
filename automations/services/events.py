"""The events intake (AUT-30, D-14): store the event and its activity and fan it out."""

from __future__ import annotations

import json
import secrets
import string
import time
from dataclasses import dataclass
from typing import Any

from django.db import transaction

# --- events intake (AUT-30, D-14) -------------------------------------------------------------------------------

_B36 = string.digits + string.ascii_lowercase


def _base36(n: int) -> str:
    out = ""
    while True:
        n, r = divmod(n, 36)
        out = _B36[r] + out
        if n == 0:
            return out


def new_event_id() -> str:
    """`evt_` + base-36 millisecond timestamp + 8 random base-36 characters (one draw from the OS's random
    source for all eight: the same uniform choice as eight draws, which cost eight reads of it; issue 12)."""
    suffix = _base36(secrets.randbelow(_SUFFIX_SPACE)).rjust(8, "0")
    return "evt_" + _base36(int(time.time() * 1000)) + suffix


_SUFFIX_SPACE = 36**8


@dataclass(frozen=True)
class EventResult:
    event_id: str
    contact_id: str
    event_name: str
    triggered_automations: int
    contact_created: bool


class ContactNotFound(Exception):
    pass


def event_record(
    *,
    organization_id: Any,
    email: str,
    event_name: str,
    event_properties: dict[str, Any] | None,
    create_contact: bool,
    actor: str,
) -> EventResult:
    """Store the event and its `event_received` activity and fan it out (AUT-17); raises ContactNotFound.
    Opens its own transaction when the caller has none (the events API's view has none: see `_intake_statement`)."""
    from automations.triggers import automation_fanout, contact_and_candidates
    from owlat.contacts import contact_find_or_create, normalize_email
    from owlat.triggers import fire_trigger

    address = normalize_email(email)
    # Issue 12 item 3: no savepoint of our own (the caller's transaction, or one without savepoints), the
    # contact's id read once (the find-or-create only when it is missing), the fan-out before the event row so
    # the row is inserted with its count (no UPDATE after), the runs opened set-based (automations.triggers),
    # the event and its activity in one statement; the contact read with the fan-out's candidate automations.
    contact_id, candidates = contact_and_candidates(
        organization_id=organization_id, email=address, kind="event_received"
    )
    if contact_id is None and not create_contact:
        raise ContactNotFound(address)
    data = {"eventName": event_name, "eventProperties": event_properties}
    if contact_id is not None:
        result = _intake_statement(
            organization_id, contact_id, event_name, event_properties, data, candidates
        )
        if result is not None:
            return result
    with transaction.atomic(savepoint=False):
        created = False
        prefetched = None if contact_id is None else {automation_fanout: candidates}
        if contact_id is None:
            # Fires contact_created first (its runs are not counted below).
            contact, created = contact_find_or_create(
                organization_id=organization_id, email=address, source="api", actor=actor, mode="upsert"
            )
            contact_id = contact.pk
        run_ids = fire_trigger(
            "event_received",
            organization_id=organization_id,
            contact_id=contact_id,
            data=data,
            prefetched=prefetched,
        )
        event_id = _event_insert(
            organization_id=organization_id,
            contact_id=contact_id,
            event_name=event_name,
            event_properties=event_properties,
            triggered=len(run_ids),
        )
    return EventResult(
        event_id=event_id,
        contact_id=str(contact_id),
        event_name=event_name,
        triggered_automations=len(run_ids),
        contact_created=created,
    )


def _intake_statement(
    organization_id: Any,
    contact_id: Any,
    event_name: str,
    event_properties: dict[str, Any] | None,
    data: dict[str, Any],
    candidates: list[Any],
) -> EventResult | None:
    """The whole intake of an event for an existing contact as one statement on PostgreSQL (issue 12: the
    events API's writes were a transaction of four round trips): the runs it opens with their step 0 and the
    walker's wake-up (`automations.lifecycle.RunsOpening`), the event with their count and its activity — what
    `fire_trigger` and `_event_insert` write, atomic by being one statement. None (nothing written) when that
    is not the whole of it: another database, another trigger listener than the fan-out, a run whose step 0 is
    delayed or missing (a due task or the start task follows), or a wake-up that is not a broker row."""
    from django.db import connection
    from django.utils import timezone

    from automations.lifecycle import RunsOpening
    from automations.triggers import automation_fanout, fanout_items
    from automations.walker_batch import WALK_TASK
    from owlat.registry import TriggerEvent, trigger_listeners
    from owlat.sql import prepared_cursor

    if connection.vendor != "postgresql" or trigger_listeners() != (automation_fanout,):
        return None
    now = timezone.now()
    event = TriggerEvent("event_received", str(organization_id), str(contact_id), data)
    items = fanout_items(event, candidates, now=now)
    if any(step is None or due is not None for *_, step, due in items):
        return None
    opening = RunsOpening(items, at=now, wake=WALK_TASK) if items else None
    if opening is not None and not opening.wakes:
        return None
    event_id, sql, params = _event_insert_sql(
        organization_id=organization_id,
        contact_id=contact_id,
        event_name=event_name,
        event_properties=event_properties,
        triggered="(SELECT count(*) FROM run)" if opening else 0,
        at=now,
    )
    if opening is None:
        with prepared_cursor() as cursor:
            cursor.execute(f"WITH {sql}", params)
        triggered = 0
    else:
        with prepared_cursor() if opening.preparable else connection.cursor() as cursor:
            cursor.execute(
                f"WITH {opening.ctes}, {sql} RETURNING (SELECT count(*) FROM run)", [*opening.params, *params]
            )
            (triggered,) = cursor.fetchone()
    return EventResult(
        event_id=event_id,
        contact_id=str(contact_id),
        event_name=event_name,
        triggered_automations=triggered,
        contact_created=False,
    )


def _event_insert(
    *, organization_id: Any, contact_id: Any, event_name: str, event_properties: Any, triggered: int
) -> str:
    """The event row (D-14) with its `event_received` activity (DOM-11); one statement on PostgreSQL."""
    from django.db import connection
    from django.utils import timezone

    from owlat.activities import activity_record
    from owlat.models import Event
    from owlat.sql import prepared_cursor

    now = timezone.now()
    if connection.vendor != "postgresql":
        event_id = new_event_id()
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
            metadata={"eventId": event_id, "eventName": event_name, "eventProperties": event_properties},
            at=now,
        )
        return event_id
    event_id, sql, params = _event_insert_sql(
        organization_id=organization_id,
        contact_id=contact_id,
        event_name=event_name,
        event_properties=event_properties,
        triggered=triggered,
        at=now,
    )
    with prepared_cursor() as cursor:
        cursor.execute(f"WITH {sql}", params)
    return event_id


def _event_insert_sql(
    *,
    organization_id: Any,
    contact_id: Any,
    event_name: str,
    event_properties: Any,
    triggered: int | str,
    at: Any,
) -> tuple[str, str, list[Any]]:
    """The new event's id, and its row with its activity as PostgreSQL text to follow a `WITH` (the `event` CTE,
    then the activity's INSERT) with its parameters. `triggered`: the count, or an SQL expression giving it."""
    from owlat.activities import activity_insert_sql
    from owlat.models import Event

    event_id = new_event_id()
    activity_sql, activity_params = activity_insert_sql(
        organization_id=organization_id,
        contact_id=contact_id,
        activity_type="event_received",
        metadata={"eventId": event_id, "eventName": event_name, "eventProperties": event_properties},
        at=at,
    )
    count = "%s" if isinstance(triggered, int) else triggered
    sql = (
        f"event AS (INSERT INTO {Event._meta.db_table} "
        "(id, organization_id, contact_id, event_name, properties, triggered_automations, created_at) "
        f"VALUES (%s, %s::uuid, %s::uuid, %s, %s::jsonb, {count}, %s)) {activity_sql}"
    )
    properties = None if event_properties is None else json.dumps(event_properties)
    params = [event_id, str(organization_id), str(contact_id), event_name, properties]
    params += [triggered, at] if isinstance(triggered, int) else [at]
    return event_id, sql, [*params, *activity_params]
