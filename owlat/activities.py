"""DOM-11 contact timeline rows."""

from __future__ import annotations

import datetime as dt
import json
import uuid
from typing import Any

from django.utils import timezone

from owlat.models import Contact, ContactActivity

ACTIVITY_TYPES = (
    "created",
    "email_sent",
    "email_opened",
    "email_clicked",
    "email_bounced",
    "email_complained",
    "inbound_received",
    "topic_confirmed",
    "topic_unsubscribed",
    "doi_attested",
    "event_received",
)
_CONTACT_FLAGS = {"email_opened": "has_opened", "email_clicked": "has_clicked"}


def activity_record(
    *,
    organization_id: Any,
    contact_id: Any,
    activity_type: str,
    metadata: dict[str, Any] | None = None,
    at: dt.datetime | None = None,
) -> ContactActivity:
    """Write a timeline row; `email_opened` / `email_clicked` also set the contact's activity flag."""
    if activity_type not in ACTIVITY_TYPES:
        raise ValueError(f"unknown activity type {activity_type!r}")
    row = ContactActivity.objects.create(
        organization_id=organization_id,
        contact_id=contact_id,
        activity_type=activity_type,
        metadata=metadata or {},
        occurred_at=at or timezone.now(),
    )
    flag = _CONTACT_FLAGS.get(activity_type)
    if flag:
        Contact.objects.filter(pk=contact_id, organization_id=organization_id, **{flag: False}).update(
            **{flag: True}
        )
    return row


def activity_insert_sql(
    *,
    organization_id: Any,
    contact_id: Any,
    activity_type: str,
    metadata: dict[str, Any] | None = None,
    at: dt.datetime,
    contact_sql: str | None = None,
    source: str = "",
) -> tuple[str, list[Any]]:
    """The row `activity_record` writes, as one PostgreSQL `INSERT` and its parameters, for a caller that writes
    it in the same statement as its cause (the events intake, issue 12). Types that set a contact flag are
    written by `activity_record` only. `contact_sql` (then `contact_id` is not used): an SQL expression giving
    the contact's id, over `source` (e.g. `" FROM c WHERE …"`: the row is written when that gives one)."""
    if activity_type not in ACTIVITY_TYPES or activity_type in _CONTACT_FLAGS:
        raise ValueError(f"activity type {activity_type!r} is written by activity_record")
    sql = (
        f"INSERT INTO {ContactActivity._meta.db_table} "
        "(id, organization_id, contact_id, activity_type, metadata, occurred_at) "
        f"SELECT %s::uuid, %s::uuid, {contact_sql or '%s::uuid'}, %s::varchar, %s::jsonb, %s::timestamptz{source}"
    )
    params = [str(uuid.uuid4()), str(organization_id)]
    if contact_sql is None:
        params.append(str(contact_id))
    params += [activity_type, json.dumps(metadata or {}), at]
    return sql, params
