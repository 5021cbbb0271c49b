"""Trigger kinds and the fanout (AUT-15 … AUT-17).

`automation_fanout` is registered with the kernel (`owlat.registry.register_trigger_listener`) in
`AutomationsConfig.ready()`; the kernel's contact, topic and event write paths call `owlat.triggers.fire_trigger`,
which runs it inside the caller's transaction.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.utils import timezone

from automations.models import Automation, AutomationStep
from owlat.registry import TriggerEvent


@dataclass(frozen=True)
class TriggerKind:
    """`config_key` names the string the config must carry (None: no config); `data_key` the fired value."""

    config_key: str | None
    matches: Callable[[dict[str, Any], str | None], bool]
    trigger_data: Callable[[dict[str, Any], str | None], dict[str, Any] | None]


def _string_or_none(config: Any, key: str | None) -> str | None:
    if key is None or not isinstance(config, dict):
        return None
    value = config.get(key)
    return value if isinstance(value, str) else None


def _event_data(data: dict[str, Any], name: str | None) -> dict[str, Any]:
    out: dict[str, Any] = {"eventName": data.get("eventName")}
    props = data.get("eventProperties")
    if props is not None:
        out["eventProperties"] = json.dumps(props, separators=(",", ":"), sort_keys=True)
    return out


TRIGGER_KINDS: dict[str, TriggerKind] = {
    "contact_created": TriggerKind(None, lambda data, cfg: True, lambda data, cfg: None),
    "contact_updated": TriggerKind(
        "propertyKey",
        lambda data, key: key is not None and key in (data.get("changedFields") or []),
        lambda data, key: {"propertyKey": key},
    ),
    "event_received": TriggerKind(
        "eventName",
        lambda data, name: name is not None and data.get("eventName") == name,
        _event_data,
    ),
    "topic_subscribed": TriggerKind(
        "topicId",
        lambda data, topic_id: topic_id is not None and str(data.get("topicId")) == topic_id,
        lambda data, topic_id: {"topicId": topic_id},
    ),
}


def trigger_matches(kind: str, config: Any, data: dict[str, Any]) -> tuple[bool, dict[str, Any] | None]:
    """AUT-15 matching; a config whose key is missing or not a string does not match (never raises)."""
    spec = TRIGGER_KINDS.get(kind)
    if spec is None:
        return False, None
    value = _string_or_none(config, spec.config_key)
    if spec.config_key is not None and value is None:
        return False, None
    if not spec.matches(data, value):
        return False, None
    return True, spec.trigger_data(data, value)


@dataclass(frozen=True)
class _Candidate:
    automation_id: Any
    organization_id: Any
    trigger_config: Any
    has_steps: bool
    has_running: bool
    first_step: AutomationStep | None


def _candidates(event: TriggerEvent) -> list[_Candidate]:
    """The organization's active automations of the event's trigger kind, whether each has steps and a running
    run of the contact, and its step 0 — one statement, written out instead of built by the ORM (the
    fan-out runs inside every API call that fires a trigger, and compiling the two annotated querysets it used
    cost about a quarter of the events API's CPU). Portable SQL; values go through the fields' own conversions
    (UUIDs are hex text on SQLite, JSON is decoded by the JSONField)."""
    from django.db import connection

    from automations.sql import candidate_rows

    uuid_field = Automation._meta.pk
    rows = candidate_rows(
        contact_id=uuid_field.get_db_prep_value(event.contact_id, connection),
        organization_id=uuid_field.get_db_prep_value(event.organization_id, connection),
        kind=event.kind,
    )
    return [c for c in map(_candidate, rows) if c is not None]


def contact_and_candidates(*, organization_id: Any, email: str, kind: str) -> tuple[Any, list[_Candidate]]:
    """The id of the organization's live contact with this (normalized) email (the lowest id, as
    `owlat.contacts.live_contacts` would find it) and, when there is one, `_candidates` of a `kind` trigger for it
    — one statement (the events API
    read the contact and then the candidates). (None, []) when there is no such contact."""
    from django.db import connection

    from automations.sql import contact_and_candidate_rows
    from owlat.models import Contact

    org = Automation._meta.pk.get_db_prep_value(organization_id, connection)
    rows = contact_and_candidate_rows(organization_id=org, email=email, kind=kind)
    if not rows:
        return None, []
    contact_id = Contact._meta.pk.to_python(rows[0][0])
    return contact_id, [c for c in (_candidate(row[1:]) for row in rows) if c is not None]


def _candidate(row: Any) -> _Candidate | None:
    """A `_Candidate` from `automations.sql.candidate_rows`' columns (None: the outer join found no automation)."""
    from django.db import connection

    a_id, org_id, config, has_steps, has_running, s_id, s_type, s_config = row
    if a_id is None:
        return None
    uuid_field = Automation._meta.pk
    automation_id, organization_id = uuid_field.to_python(a_id), uuid_field.to_python(org_id)
    first = None
    if s_id is not None:
        first = AutomationStep(
            id=uuid_field.to_python(s_id),
            organization_id=organization_id,
            automation_id=automation_id,
            step_index=0,
            step_type=s_type,
            config=_STEP_CONFIG.from_db_value(s_config, None, connection),
        )
    return _Candidate(
        automation_id,
        organization_id,
        _TRIGGER_CONFIG.from_db_value(config, None, connection),
        bool(has_steps),
        bool(has_running),
        first,
    )


_TRIGGER_CONFIG = Automation._meta.get_field("trigger_config")
_STEP_CONFIG = AutomationStep._meta.get_field("config")


def automation_fanout(
    event: TriggerEvent, *, now: dt.datetime | None = None, prefetched: list[_Candidate] | None = None
) -> list[str]:
    """AUT-17: open a run per matching active automation; returns the created run ids. `prefetched`: the
    event's `_candidates`, read by the caller in a statement it ran anyway (`contact_and_candidates`).

    Set-based: one read of the candidate automations with their step 0 (`_candidates`), one
    statement inserting every run (the partial unique index drops a contact's second running run without a
    savepoint), step 0's step runs and their counter deltas, and one walker wake-up for all of them."""
    # AUT-18 `start_run` in the same transaction (saving a hop per run): step 0 of each new run
    # becomes its pending step run at once (runs, step runs and their counters in one statement) and the batched
    # walker is woken once; a run whose automation has no step 0 is left to the start task (which completes it).
    from automations.lifecycle import runs_open_and_start_many
    from automations.walker import EXECUTE_TASK
    from automations.walker_batch import WALK_TASK
    from owlat.jobs import enqueue

    now = now or timezone.now()
    items = fanout_items(event, _candidates(event) if prefetched is None else prefetched, now=now)
    # the walker's wake-up (coalesced), by the same statement on PostgreSQL's ORM broker
    opened, created = runs_open_and_start_many(items, at=now, wake=WALK_TASK)
    run_ids = [str(run_id) for run_id, _ in opened]
    for step_run in created:
        if step_run.delay_until is not None:
            enqueue(EXECUTE_TASK, str(step_run.run_id), str(step_run.pk), 0, at=step_run.delay_until)
    started = {step_run.run_id for step_run in created}
    unstarted = [str(run_id) for run_id, _ in opened if run_id not in started]
    if unstarted:
        enqueue("automations.tasks.automation_run_start_task", *unstarted)
    return run_ids


#: What `runs_open_and_start_many` takes per run: (automation id, organization id, contact id, triggered_by,
#: trigger data, step 0 or None, step 0's due time or None: at once).
FanoutItem = tuple[Any, Any, Any, str, dict[str, Any] | None, AutomationStep | None, dt.datetime | None]


def fanout_items(event: TriggerEvent, candidates: list[_Candidate], *, now: dt.datetime) -> list[FanoutItem]:
    """The runs `automation_fanout` opens for `event` among its `candidates` (matching, without a running run
    of the contact, with steps), each with its step 0 and when that is due."""
    from automations.walker import _entry_delay

    items = []
    for candidate in candidates:
        matched, trigger_data = trigger_matches(event.kind, candidate.trigger_config, event.data)
        if not matched or candidate.has_running or not candidate.has_steps:
            continue
        step, due = candidate.first_step, None
        if step is not None:
            delay = _entry_delay(step)
            due = now + delay if delay > dt.timedelta(0) else None
        items.append(
            (
                candidate.automation_id,
                candidate.organization_id,
                event.contact_id,
                event.kind,
                trigger_data,
                step,
                due,
            )
        )
    return items
