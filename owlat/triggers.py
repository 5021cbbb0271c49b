"""Trigger firing (AUT-16): the kernel's write paths call `fire_trigger`; automations registers its fanout."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from owlat.registry import TriggerEvent, trigger_listeners

TRIGGER_KINDS = ("contact_created", "contact_updated", "event_received", "topic_subscribed")


def fire_trigger(
    kind: str,
    *,
    organization_id: Any,
    contact_id: Any,
    data: dict[str, Any] | None = None,
    prefetched: Mapping[Callable[..., list[str]], Any] | None = None,
) -> list[str]:
    """Run every registered listener inside the caller's transaction; returns the ids of the runs opened.

    `prefetched` maps a listener to what it would read first, when the caller read it in a statement it ran
    anyway (the events API reads the contact and the fanout's candidates together); that listener is
    called with `prefetched=<value>`."""
    if kind not in TRIGGER_KINDS:
        raise ValueError(f"unknown trigger kind {kind!r}")
    event = TriggerEvent(
        kind=kind, organization_id=str(organization_id), contact_id=str(contact_id), data=data or {}
    )
    run_ids: list[str] = []
    for listener in trigger_listeners():
        if prefetched is not None and listener in prefetched:
            run_ids.extend(listener(event, prefetched=prefetched[listener]))
        else:
            run_ids.extend(listener(event))
    return run_ids
