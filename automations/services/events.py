"""The events intake (AUT-30, D-14): store the event and its activity and fan it out."""

from __future__ import annotations

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


#: (organization id, event name) whose last event in this process was written by one statement after the read
#: (`events_sql.intake_write`): their next one tries the read and the writes as one statement first. Only which
#: statement runs depends on it, never what is written (each statement reads the automations as they are).
_ONE_STATEMENT: set[tuple[str, str]] = set()
_ONE_STATEMENT_MAX = 10_000


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
    Opens its own transaction when the caller has none (the events API's view has none): for an existing
    contact whose runs all start at once, one statement on PostgreSQL (`automations.services.events_sql`)."""
    from automations.services import events_sql
    from automations.triggers import automation_fanout, contact_and_candidates
    from owlat.contacts import contact_find_or_create, normalize_email
    from owlat.triggers import fire_trigger

    address = normalize_email(email)
    data = {"eventName": event_name, "eventProperties": event_properties}
    one_statement = events_sql.one_statement_possible()
    hint = (str(organization_id), event_name)
    missing = False
    if one_statement and hint in _ONE_STATEMENT:
        done = events_sql.intake_statement(
            organization_id=organization_id,
            email=address,
            event_name=event_name,
            event_properties=event_properties,
            data=data,
        )
        if done is not None and done[0] is not None:
            return EventResult(done[0], str(done[1]), event_name, done[2], False)
        missing = done is not None and done[1] is None  # the statement found no such contact
        if not missing:
            _ONE_STATEMENT.discard(hint)
    # Issue 12 item 3: no savepoint of our own (the caller's transaction, or one without savepoints), the
    # contact's id read once (the find-or-create only when it is missing), the fan-out before the event row so
    # the row is inserted with its count (no UPDATE after), the runs opened set-based (automations.triggers),
    # the event and its activity in one statement; the contact read with the fan-out's candidate automations.
    contact_id, candidates = (
        (None, [])
        if missing
        else contact_and_candidates(organization_id=organization_id, email=address, kind="event_received")
    )
    if contact_id is None and not create_contact:
        raise ContactNotFound(address)
    if one_statement and contact_id is not None:
        written = events_sql.intake_write(
            organization_id=organization_id,
            contact_id=contact_id,
            event_name=event_name,
            event_properties=event_properties,
            data=data,
            candidates=candidates,
        )
        if written is not None:
            if len(_ONE_STATEMENT) >= _ONE_STATEMENT_MAX:
                _ONE_STATEMENT.clear()
            _ONE_STATEMENT.add(hint)
            return EventResult(written[0], str(contact_id), event_name, written[1], False)
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


def _event_insert(
    *, organization_id: Any, contact_id: Any, event_name: str, event_properties: Any, triggered: int
) -> str:
    """The event row (D-14) with its `event_received` activity (DOM-11); one statement on PostgreSQL."""
    from django.db import connection
    from django.utils import timezone

    from automations.services.events_sql import event_insert_sql
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
    event_id, event, activity, params = event_insert_sql(
        organization_id=organization_id,
        contact_id=contact_id,
        event_name=event_name,
        event_properties=event_properties,
        triggered=triggered,
        at=now,
    )
    with prepared_cursor() as cursor:
        cursor.execute(f"WITH {event} {activity}", params)
    return event_id
