"""The events intake (AUT-30, D-14): store the event and its activity and fan it out."""

from __future__ import annotations

import random
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
    """`evt_` + base-36 millisecond timestamp + 8 random base-36 characters."""
    rnd = random.SystemRandom()
    return "evt_" + _base36(int(time.time() * 1000)) + "".join(rnd.choice(_B36) for _ in range(8))


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
    """Store the event and its `event_received` activity and fan it out (AUT-17); raises ContactNotFound."""
    from owlat.activities import activity_record
    from owlat.contacts import contact_find_or_create, live_contacts, normalize_email
    from owlat.models import Event
    from owlat.triggers import fire_trigger

    address = normalize_email(email)
    # Issue 12 item 3: no savepoint of our own (the caller's transaction, or one without savepoints), the
    # contact read once (the find-or-create only when it is missing), the fan-out before the event row so the
    # row is inserted with its count (no UPDATE after), the runs opened set-based (automations.triggers).
    contact = live_contacts(organization_id).filter(email=address).first()
    if contact is None and not create_contact:
        raise ContactNotFound(address)
    with transaction.atomic(savepoint=False):
        created = False
        if contact is None:
            # Fires contact_created first (its runs are not counted below).
            contact, created = contact_find_or_create(
                organization_id=organization_id, email=address, source="api", actor=actor, mode="upsert"
            )
        run_ids = fire_trigger(
            "event_received",
            organization_id=organization_id,
            contact_id=contact.pk,
            data={"eventName": event_name, "eventProperties": event_properties},
        )
        event = Event.objects.create(
            id=new_event_id(),
            organization_id=organization_id,
            contact=contact,
            event_name=event_name,
            properties=event_properties,
            triggered_automations=len(run_ids),
        )
        activity_record(
            organization_id=organization_id,
            contact_id=contact.pk,
            activity_type="event_received",
            metadata={"eventId": event.pk, "eventName": event_name, "eventProperties": event_properties},
        )
    return EventResult(
        event_id=event.pk,
        contact_id=str(contact.pk),
        event_name=event_name,
        triggered_automations=len(run_ids),
        contact_created=created,
    )
