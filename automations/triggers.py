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

from django.db.models import Exists, OuterRef
from django.utils import timezone

from automations.lifecycle import runs_open_many
from automations.models import Automation, AutomationRun, AutomationStatus, AutomationStep, RunStatus
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


def automation_fanout(event: TriggerEvent, *, now: dt.datetime | None = None) -> list[str]:
    """AUT-17: open a run per matching active automation; returns the created run ids.

    Set-based (issue 12 item 3): one read of the candidate automations, one insert of every run (the partial
    unique index drops a contact's second running run without a savepoint), one counter insert and one start
    task for all of them."""
    from owlat.jobs import enqueue

    now = now or timezone.now()
    automations = Automation.objects.filter(
        organization_id=event.organization_id, status=AutomationStatus.ACTIVE, trigger_type=event.kind
    ).annotate(
        has_steps=Exists(AutomationStep.objects.filter(automation_id=OuterRef("pk"))),
        has_running=Exists(
            AutomationRun.objects.filter(
                automation_id=OuterRef("pk"), contact_id=event.contact_id, status=RunStatus.RUNNING
            )
        ),
    )
    wanted = []
    for automation in automations:
        matched, trigger_data = trigger_matches(event.kind, automation.trigger_config, event.data)
        if not matched or automation.has_running or not automation.has_steps:
            continue
        wanted.append((automation.pk, automation.organization_id, event.contact_id, event.kind, trigger_data))
    # AUT-18 `start_run` in the same transaction (issue 12 item 3, saving a hop per run): step 0 of each new run
    # becomes its pending step run at once and the batched walker is woken once; a run whose automation has no
    # step 0 is left to the start task (which completes it).
    from automations.lifecycle import step_runs_create_many
    from automations.walker import EXECUTE_TASK, _entry_delay
    from automations.walker_batch import WALK_TASK

    first_steps = (
        {
            s.automation_id: s
            for s in AutomationStep.objects.filter(automation_id__in=[w[0] for w in wanted], step_index=0)
        }
        if wanted
        else {}
    )
    due: dict[Any, dt.datetime | None] = {}
    for automation_id, step in first_steps.items():
        delay = _entry_delay(step)
        due[automation_id] = now + delay if delay > dt.timedelta(0) else None
    opened = runs_open_many(wanted, at=now, next_step_at=due)
    run_ids = [str(run_id) for run_id, _ in opened]
    org_of = {w[0]: w[1] for w in wanted}
    created = step_runs_create_many(
        [
            (
                AutomationRun(id=run_id, organization_id=org_of[automation_id], automation_id=automation_id),
                first_steps[automation_id],
                now,
                due[automation_id],
            )
            for run_id, automation_id in opened
            if automation_id in first_steps
        ]
    )
    for step_run in created:
        if step_run.delay_until is not None:
            enqueue(EXECUTE_TASK, str(step_run.run_id), str(step_run.pk), 0, at=step_run.delay_until)
    if any(step_run.delay_until is None for step_run in created):
        enqueue(WALK_TASK)
    unstarted = [str(run_id) for run_id, automation_id in opened if automation_id not in first_steps]
    if unstarted:
        enqueue("automations.tasks.automation_run_start_task", *unstarted)
    return run_ids
