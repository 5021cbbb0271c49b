"""The events intake (AUT-30, D-14): store the event and its activity and fan it out."""

from __future__ import annotations

import secrets
import string
import time
from dataclasses import dataclass
from typing import Any

from django.db import transaction

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
    source for all eight: the same uniform choice as eight draws, which cost eight reads of it)."""
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
    Uses the caller's transaction, or opens one without a savepoint (the events API's view has none). The
    contact is read with the fan-out's candidate automations in one statement; the runs open set-based
    (`automations.triggers.automation_fanout`) before the event row, so the row is inserted with its count."""
    from automations.triggers import automation_fanout, contact_and_candidates
    from owlat.contacts import contact_find_or_create, normalize_email
    from owlat.triggers import fire_trigger

    address = normalize_email(email)
    data = {"eventName": event_name, "eventProperties": event_properties}
    contact_id, candidates = contact_and_candidates(
        organization_id=organization_id, email=address, kind="event_received"
    )
    if contact_id is None and not create_contact:
        raise ContactNotFound(address)
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
    """The event row (D-14) with its `event_received` activity (DOM-11)."""
    from django.utils import timezone

    from automations.sql import event_insert

    return event_insert(
        organization_id=organization_id,
        contact_id=contact_id,
        event_name=event_name,
        event_properties=event_properties,
        triggered=triggered,
        at=timezone.now(),
    )
