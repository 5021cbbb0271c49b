"""Trigger firing (AUT-16): the kernel's write paths call `fire_trigger`; automations registers its fanout."""

from __future__ import annotations

from typing import Any

from owlat.registry import TriggerEvent, trigger_listeners

TRIGGER_KINDS = ("contact_created", "contact_updated", "event_received", "topic_subscribed")


def fire_trigger(
    kind: str, *, organization_id: Any, contact_id: Any, data: dict[str, Any] | None = None
) -> list[str]:
    """Run every registered listener inside the caller's transaction; returns the ids of the runs opened."""
    if kind not in TRIGGER_KINDS:
        raise ValueError(f"unknown trigger kind {kind!r}")
    event = TriggerEvent(
        kind=kind, organization_id=str(organization_id), contact_id=str(contact_id), data=data or {}
    )
    run_ids: list[str] = []
    for listener in trigger_listeners():
        run_ids.extend(listener(event))
    return run_ids
