"""DOM-11 contact timeline rows."""

from __future__ import annotations

import datetime as dt
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
    "imported",
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
