"""The automations app's hand-written statements, each with its reason and its SQLite twin where it has one.

Raw SQL lives here (and in `owlat.sql` for the kernel): everywhere else the ORM, which `owlat/tests/
test_raw_sql_contained.py` enforces. Values are bound as parameters; table names come from the models' `_meta`.
"""

from __future__ import annotations

import datetime as dt
import json
import uuid
from typing import Any

from django.db import connection


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
