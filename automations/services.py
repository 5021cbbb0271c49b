"""Automation writes other than status (AUT-01, AUT-02): create, edit, steps, duplicate, delete; the events
intake (AUT-30); reads for the funnel (AUT-35) and the stats backfill.

Refusals raise `AutomationRefused(reason, message)` (API: 422 `invalid_state` with `data.reason`); invalid
input raises `AutomationInvalid(message, field)` (API: 400 with `data.field`).
"""

from __future__ import annotations

import random
import string
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from django.db import transaction
from django.db.models import Count, F, Q
from django.utils import timezone

from automations.lifecycle import ACTIVE, DRAFT, TRIGGER_CONFIG_KEYS
from automations.models import (
    Automation,
    AutomationRun,
    AutomationStep,
    RunStatus,
    StepRunStatus,
    StepType,
    TriggerType,
)
from automations.steps import StepConfigError, validate_step_config


class AutomationRefused(Exception):
    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason
        self.message = message


class AutomationInvalid(Exception):
    def __init__(self, message: str, field: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.field = field


NOT_DRAFT_STEP_MESSAGES = {
    "add": "Steps can only be added while the automation is a draft",
    "edit": "Steps can only be edited while the automation is a draft",
    "reorder": "Steps can only be reordered while the automation is a draft",
    "remove": "Steps can only be removed while the automation is a draft",
}
NOT_DRAFT_TRIGGER_MESSAGE = "Cannot update trigger on active or paused automations"
DELETE_ACTIVE_MESSAGE = "Cannot delete active automations. Please pause first."
_SHIFT = 1_000_000  # temporary offset that keeps (automation, step_index) unique while indexes move


# --- validation -----------------------------------------------------------------------------------------------


def validate_trigger(
    trigger_type: Any, trigger_config: Any, *, organization_id: Any = None
) -> tuple[str, dict[str, Any] | None]:
    """Shape check of AUT-15 for storage. A draft may lack its config (activation refuses it, AUT-09).
    With `organization_id`, a `topicId` must be a topic of that organization (API-24)."""
    if not isinstance(trigger_type, str) or trigger_type not in TriggerType.values:
        raise AutomationInvalid(f"triggerType must be one of {', '.join(TriggerType.values)}", "triggerType")
    if trigger_config is None:
        return trigger_type, None
    if not isinstance(trigger_config, dict):
        raise AutomationInvalid("triggerConfig must be an object", "triggerConfig")
    key = TRIGGER_CONFIG_KEYS.get(trigger_type)
    if key is None:
        return trigger_type, None  # contact_created takes no configuration
    value = trigger_config.get(key)
    if value is not None and not (isinstance(value, str) and value):
        raise AutomationInvalid(f"triggerConfig.{key} must be a non-empty string", f"triggerConfig.{key}")
    if value is not None and key == "topicId" and organization_id is not None:
        from owlat.models import Topic

        if not _exists(Topic, organization_id, value):
            raise AutomationInvalid("Topic not found", "triggerConfig.topicId")
    return trigger_type, ({key: value} if value is not None else {})


def validate_step(
    step_type: Any, config: Any, *, prefix: str = "", organization_id: Any = None
) -> tuple[str, dict[str, Any]]:
    """Shape check per AUT-31 … AUT-34; with `organization_id`, referenced ids must exist there (API-24)."""
    if not isinstance(step_type, str) or step_type not in StepType.values:
        raise AutomationInvalid(f"stepType must be one of {', '.join(StepType.values)}", f"{prefix}stepType")
    try:
        canonical = validate_step_config(step_type, config)
    except StepConfigError as exc:
        field = f"{prefix}config.{exc.field}" if exc.field else f"{prefix}config"
        raise AutomationInvalid(exc.message, field) from exc
    if organization_id is not None:
        _check_step_references(step_type, canonical, organization_id, prefix)
    return step_type, canonical


def _exists(model: Any, organization_id: Any, pk: Any) -> bool:
    import uuid

    try:
        pk = uuid.UUID(str(pk))
    except ValueError:
        return False
    return model.objects.filter(pk=pk, organization_id=organization_id).exists()


def _check_step_references(step_type: str, config: dict[str, Any], organization_id: Any, prefix: str) -> None:
    if step_type == StepType.EMAIL:
        from templates.models import EmailTemplate

        if not _exists(EmailTemplate, organization_id, config["emailTemplateId"]):
            raise AutomationInvalid("Email template not found", f"{prefix}config.emailTemplateId")
    elif step_type == StepType.CONDITION:
        topic_id = config["condition"].get("topicId")
        if topic_id is not None:
            from owlat.models import Topic

            if not _exists(Topic, organization_id, topic_id):
                raise AutomationInvalid("Topic not found", f"{prefix}config.condition.topicId")


# --- branch remapping (AUT-02) --------------------------------------------------------------------------------

_BRANCH_KEYS = ("yesBranchStepIndex", "noBranchStepIndex")


def remap_branches(config: dict[str, Any], mapping: Callable[[int], int | None]) -> dict[str, Any]:
    """Return a condition config whose branch targets went through `mapping` (None = the target is gone)."""
    out = dict(config)
    for key in _BRANCH_KEYS:
        value = out.get(key)
        if isinstance(value, int) and not isinstance(value, bool):
            out[key] = mapping(value)
    return out


def _apply_index_changes(
    automation: Automation, new_index: dict[Any, int], mapping: Callable[[int], int | None]
) -> None:
    """Move steps to their new indexes (two phases keep the unique constraint) and remap branch targets."""
    steps = list(AutomationStep.objects.select_for_update().filter(automation=automation))
    moving = [s for s in steps if s.pk in new_index and new_index[s.pk] != s.step_index]
    if moving:
        AutomationStep.objects.filter(pk__in=[s.pk for s in moving]).update(
            step_index=F("step_index") + _SHIFT
        )
        for s in moving:
            AutomationStep.objects.filter(pk=s.pk).update(step_index=new_index[s.pk])
    for s in steps:
        if s.step_type == StepType.CONDITION and s.pk in new_index:
            remapped = remap_branches(s.config, mapping)
            if remapped != s.config:
                AutomationStep.objects.filter(pk=s.pk).update(config=remapped)


def _lock_draft(automation_id: Any, organization_id: Any, verb: str) -> Automation:
    automation = _lock(automation_id, organization_id)
    if automation.status != DRAFT:
        raise AutomationRefused("not_draft", NOT_DRAFT_STEP_MESSAGES[verb])
    return automation


def _lock(automation_id: Any, organization_id: Any) -> Automation:
    automation = (
        Automation.objects.select_for_update()
        .filter(pk=automation_id, organization_id=organization_id)
        .first()
    )
    if automation is None:
        raise AutomationRefused("automation_not_found", "Automation not found")
    return automation


def _touch(automation: Automation) -> None:
    Automation.objects.filter(pk=automation.pk).update(updated_at=timezone.now())


# --- automations ----------------------------------------------------------------------------------------------


def automation_create(
    *,
    organization_id: Any,
    actor: str,
    name: str,
    trigger_type: str,
    trigger_config: dict[str, Any] | None = None,
    description: str | None = None,
    steps: Iterable[dict[str, Any]] = (),
) -> Automation:
    """AUT-01: a new `draft` with audit `automation.created` and analytics `automation_created`."""
    from owlat.analytics import capture
    from owlat.audit import audit_write

    if not isinstance(name, str) or not name.strip():
        raise AutomationInvalid("name is required", "name")
    if len(name) > 200:
        raise AutomationInvalid("name must be at most 200 characters", "name")
    trigger_type, trigger_config = validate_trigger(
        trigger_type, trigger_config, organization_id=organization_id
    )
    validated = [
        validate_step(
            s.get("stepType") if isinstance(s, dict) else None,
            s.get("config") if isinstance(s, dict) else None,
            prefix=f"steps[{i}].",
            organization_id=organization_id,
        )
        for i, s in enumerate(steps)
    ]
    with transaction.atomic():
        automation = Automation.objects.create(
            organization_id=organization_id,
            name=name.strip(),
            description=description,
            trigger_type=trigger_type,
            trigger_config=trigger_config,
        )
        AutomationStep.objects.bulk_create(
            AutomationStep(
                organization_id=organization_id, automation=automation, step_index=i, step_type=t, config=c
            )
            for i, (t, c) in enumerate(validated)
        )
        audit_write(
            organization_id=organization_id,
            actor=actor,
            action="automation.created",
            resource="automation",
            resource_id=str(automation.pk),
            details={"name": automation.name, "triggerType": trigger_type},
        )
        capture(
            distinct_id=actor, event="automation_created", properties={"automationId": str(automation.pk)}
        )
    return automation


_UNSET: Any = object()


def automation_update(
    *,
    automation_id: Any,
    organization_id: Any,
    name: Any = _UNSET,
    description: Any = _UNSET,
    trigger_type: Any = _UNSET,
    trigger_config: Any = _UNSET,
) -> Automation:
    """Name and description in any state; trigger type/config only in `draft` (AUT-02)."""
    with transaction.atomic():
        automation = _lock(automation_id, organization_id)
        fields: list[str] = []
        if trigger_type is not _UNSET or trigger_config is not _UNSET:
            new_type = automation.trigger_type if trigger_type is _UNSET else trigger_type
            new_config = automation.trigger_config if trigger_config is _UNSET else trigger_config
            if (
                trigger_type is not _UNSET
                and trigger_type != automation.trigger_type
                and trigger_config is _UNSET
            ):
                new_config = None  # a new kind does not inherit the old kind's config
            new_type, new_config = validate_trigger(new_type, new_config, organization_id=organization_id)
            if (new_type, new_config) != (automation.trigger_type, automation.trigger_config):
                if automation.status != DRAFT:
                    raise AutomationRefused("not_draft", NOT_DRAFT_TRIGGER_MESSAGE)
                automation.trigger_type, automation.trigger_config = new_type, new_config
                fields += ["trigger_type", "trigger_config"]
        if name is not _UNSET:
            if not isinstance(name, str) or not name.strip():
                raise AutomationInvalid("name is required", "name")
            if len(name) > 200:
                raise AutomationInvalid("name must be at most 200 characters", "name")
            automation.name = name.strip()
            fields.append("name")
        if description is not _UNSET:
            if description is not None and not isinstance(description, str):
                raise AutomationInvalid("description must be a string", "description")
            automation.description = description
            fields.append("description")
        if fields:
            automation.save(update_fields=[*fields, "updated_at"])
    return automation


def automation_delete(*, automation_id: Any, organization_id: Any, actor: str) -> None:
    from owlat.audit import audit_write

    with transaction.atomic():
        automation = _lock(automation_id, organization_id)
        if automation.status == ACTIVE:
            raise AutomationRefused("automation_active", DELETE_ACTIVE_MESSAGE)
        audit_write(
            organization_id=organization_id,
            actor=actor,
            action="automation.deleted",
            resource="automation",
            resource_id=str(automation.pk),
            details={"name": automation.name},
        )
        automation.delete()


def automation_duplicate(*, automation_id: Any, organization_id: Any, actor: str) -> Automation:
    """AUT-02: a new draft "<name> (Copy)", same trigger, all steps copied, counters 0."""
    source = Automation.objects.filter(pk=automation_id, organization_id=organization_id).first()
    if source is None:
        raise AutomationRefused("automation_not_found", "Automation not found")
    steps = [
        {"stepType": s.step_type, "config": s.config}
        for s in AutomationStep.objects.filter(automation=source).order_by("step_index")
    ]
    with transaction.atomic():
        copy = Automation.objects.create(
            organization_id=organization_id,
            name=f"{source.name} (Copy)"[:200],
            description=source.description,
            trigger_type=source.trigger_type,
            trigger_config=source.trigger_config,
        )
        AutomationStep.objects.bulk_create(
            AutomationStep(
                organization_id=organization_id,
                automation=copy,
                step_index=i,
                step_type=s["stepType"],
                config=s["config"],
            )
            for i, s in enumerate(steps)
        )
        from owlat.analytics import capture
        from owlat.audit import audit_write

        audit_write(
            organization_id=organization_id,
            actor=actor,
            action="automation.created",
            resource="automation",
            resource_id=str(copy.pk),
            details={"name": copy.name, "duplicatedFrom": str(source.pk)},
        )
        capture(distinct_id=actor, event="automation_created", properties={"automationId": str(copy.pk)})
    return copy


# --- steps (draft only) -------------------------------------------------------------------------------------


def step_add(
    *, automation_id: Any, organization_id: Any, step_type: Any, config: Any, step_index: Any = None
) -> AutomationStep:
    """Insert at `step_index` (default: append); later steps and branch targets shift by one."""
    step_type, config = validate_step(step_type, config, organization_id=organization_id)
    with transaction.atomic():
        automation = _lock_draft(automation_id, organization_id, "add")
        count = AutomationStep.objects.filter(automation=automation).count()
        if step_index is None:
            position = count
        elif isinstance(step_index, bool) or not isinstance(step_index, int) or not 0 <= step_index <= count:
            raise AutomationInvalid(f"stepIndex must be an integer between 0 and {count}", "stepIndex")
        else:
            position = step_index
        every = AutomationStep.objects.filter(automation=automation).values_list("pk", "step_index")
        _apply_index_changes(
            automation,
            {pk: (idx + 1 if idx >= position else idx) for pk, idx in every},
            lambda i: i + 1 if i >= position else i,
        )
        step = AutomationStep.objects.create(
            organization_id=organization_id,
            automation=automation,
            step_index=position,
            step_type=step_type,
            config=config,
        )
        _touch(automation)
    return step


def _step_of(step_id: Any, automation: Automation) -> AutomationStep:
    step = AutomationStep.objects.filter(pk=step_id, automation=automation).first()
    if step is None:
        raise AutomationRefused("step_not_found", "Step not found")
    return step


def step_update(
    *, automation_id: Any, organization_id: Any, step_id: Any, step_type: Any = _UNSET, config: Any = _UNSET
) -> AutomationStep:
    with transaction.atomic():
        automation = _lock_draft(automation_id, organization_id, "edit")
        step = _step_of(step_id, automation)
        new_type = step.step_type if step_type is _UNSET else step_type
        new_config = step.config if config is _UNSET else config
        new_type, new_config = validate_step(new_type, new_config, organization_id=organization_id)
        step.step_type, step.config = new_type, new_config
        step.save(update_fields=["step_type", "config", "updated_at"])
        _touch(automation)
    return step


def step_remove(*, automation_id: Any, organization_id: Any, step_id: Any) -> None:
    """Remove a step; later steps move up; branches to it become null, later targets shift (AUT-02)."""
    with transaction.atomic():
        automation = _lock_draft(automation_id, organization_id, "remove")
        step = _step_of(step_id, automation)
        removed = step.step_index
        step.delete()
        every = AutomationStep.objects.filter(automation=automation).values_list("pk", "step_index")
        _apply_index_changes(
            automation,
            {pk: (idx - 1 if idx > removed else idx) for pk, idx in every},
            lambda i: None if i == removed else (i - 1 if i > removed else i),
        )
        _touch(automation)


def steps_reorder(*, automation_id: Any, organization_id: Any, step_ids: Any) -> None:
    """`step_ids` = every step id in the new order; branch targets follow their steps (AUT-02)."""
    with transaction.atomic():
        automation = _lock_draft(automation_id, organization_id, "reorder")
        current = {
            str(pk): idx
            for pk, idx in AutomationStep.objects.filter(automation=automation).values_list(
                "pk", "step_index"
            )
        }
        if (
            not isinstance(step_ids, list)
            or not all(isinstance(s, str) for s in step_ids)
            or len(step_ids) != len(current)
            or set(step_ids) != set(current)
        ):
            raise AutomationInvalid(
                "stepIds must list every step id of the automation exactly once", "stepIds"
            )
        old_to_new = {current[sid]: new for new, sid in enumerate(step_ids)}
        new_index = {
            pk: old_to_new[idx]
            for pk, idx in AutomationStep.objects.filter(automation=automation).values_list(
                "pk", "step_index"
            )
        }
        _apply_index_changes(automation, new_index, lambda i: old_to_new.get(i, i))
        _touch(automation)


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
    with transaction.atomic():
        contact = live_contacts(organization_id).filter(email=address).first()
        created = False
        if contact is None:
            if not create_contact:
                raise ContactNotFound(address)
            # Fires contact_created first (its runs are not counted below).
            contact, created = contact_find_or_create(
                organization_id=organization_id, email=address, source="api", actor=actor, mode="upsert"
            )
        event = Event.objects.create(
            id=new_event_id(),
            organization_id=organization_id,
            contact=contact,
            event_name=event_name,
            properties=event_properties,
        )
        run_ids = fire_trigger(
            "event_received",
            organization_id=organization_id,
            contact_id=contact.pk,
            data={"eventName": event_name, "eventProperties": event_properties},
        )
        Event.objects.filter(pk=event.pk).update(triggered_automations=len(run_ids))
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


# --- reads and backfill (AUT-05, AUT-35) ------------------------------------------------------------------------


def automation_funnel(automation: Automation) -> list[dict[str, Any]]:
    return [
        {
            "stepId": str(s.pk),
            "stepIndex": s.step_index,
            "stepType": s.step_type,
            "pending": s.stat_pending,
            "executing": s.stat_executing,
            "completed": s.stat_completed,
            "failed": s.stat_failed,
            "skipped": s.stat_skipped,
        }
        for s in AutomationStep.objects.filter(automation=automation).order_by("step_index")
    ]


@dataclass
class BackfillReport:
    automations: int = 0
    changed: int = 0
    steps_changed: int = 0
    last_id: str | None = None


def automation_stats_backfill(
    *,
    apply: bool,
    batch_size: int = 100,
    after: str | None = None,
    progress: Callable[[str], None] | None = None,
) -> BackfillReport:
    """Recompute the run counters (AUT-05) and per-step counters (AUT-02) from the rows, in pk batches.

    A dry run (default) only reports what would change. `after` resumes after an automation id.
    """
    report = BackfillReport()
    cursor = after
    while True:
        qs = Automation.objects.order_by("pk")
        if cursor:
            qs = qs.filter(pk__gt=cursor)
        batch = list(qs[:batch_size])
        if not batch:
            break
        for automation in batch:
            report.automations += 1
            counts = AutomationRun.objects.filter(automation=automation).aggregate(
                entered=Count("pk"),
                completed=Count("pk", filter=Q(status=RunStatus.COMPLETED)),
                cancelled=Count("pk", filter=Q(status=RunStatus.CANCELLED)),
            )
            wanted = {
                "stats_entered": counts["entered"],
                "stats_completed": counts["completed"],
                "stats_cancelled": counts["cancelled"],
            }
            if any(getattr(automation, k) != v for k, v in wanted.items()):
                report.changed += 1
                if apply:
                    Automation.objects.filter(pk=automation.pk).update(
                        **wanted, stats_updated_at=timezone.now()
                    )
            for step in AutomationStep.objects.filter(automation=automation):
                per = dict(step.step_runs.values("status").annotate(n=Count("pk")).values_list("status", "n"))
                wanted_step = {f"stat_{s}": per.get(s, 0) for s in StepRunStatus.values}
                if any(getattr(step, k) != v for k, v in wanted_step.items()):
                    report.steps_changed += 1
                    if apply:
                        AutomationStep.objects.filter(pk=step.pk).update(**wanted_step)
            cursor = str(automation.pk)
            report.last_id = cursor
        if progress:
            progress(
                f"{report.automations} automations checked, {report.changed} with run counters and "
                f"{report.steps_changed} steps with step counters {'fixed' if apply else 'to fix'}"
            )
    return report


# --- references (API-25, API-26 in-use refusals) ------------------------------------------------------------------


def automations_using_topic(organization_id: Any, topic_id: Any) -> list[dict[str, str]]:
    """Non-draft automations whose trigger or a condition step references the topic."""
    topic = str(topic_id)
    used: dict[str, dict[str, str]] = {}
    live = Automation.objects.filter(organization_id=organization_id).exclude(status=DRAFT)
    for pk in live.filter(
        trigger_type=TriggerType.TOPIC_SUBSCRIBED, trigger_config__topicId=topic
    ).values_list("pk", flat=True):
        used[str(pk)] = {"kind": "automation", "id": str(pk)}
    for pk in AutomationStep.objects.filter(
        automation__in=live, step_type=StepType.CONDITION, config__condition__topicId=topic
    ).values_list("automation_id", flat=True):
        used[str(pk)] = {"kind": "automation", "id": str(pk)}
    return list(used.values())


def automations_using_template(organization_id: Any, template_id: Any) -> list[dict[str, str]]:
    """Automations with an email step that sends the template (any status)."""
    ids = (
        AutomationStep.objects.filter(
            organization_id=organization_id,
            step_type=StepType.EMAIL,
            config__emailTemplateId=str(template_id),
        )
        .values_list("automation_id", flat=True)
        .distinct()
    )
    return [{"kind": "automation", "id": str(pk)} for pk in ids]


# --- operator transitions (the `automation_transition` command) ----------------------------------------------------


def automation_transition_operator(
    *, automation_id: Any, verb: str, actor: str, dry_run: bool = False
) -> Any:
    """Run a public lifecycle action (AUT-13) for an operator; with `dry_run` everything is rolled back
    (no status change, no audit row, no analytics event) and the outcome says what would have happened."""
    from automations.lifecycle import PUBLIC_ACTIONS
    from owlat.lifecycle import Outcome

    if verb not in PUBLIC_ACTIONS:
        raise AutomationInvalid(
            f"Unknown action {verb!r}; expected one of {', '.join(PUBLIC_ACTIONS)}", "verb"
        )
    organization_id = (
        Automation.objects.filter(pk=automation_id).values_list("organization_id", flat=True).first()
    )
    if organization_id is None:
        return Outcome(ok=False, reason="automation_not_found", message="Automation not found")
    with transaction.atomic():
        outcome = PUBLIC_ACTIONS[verb](
            automation_id=automation_id, organization_id=organization_id, actor=actor
        )
        if dry_run:
            transaction.set_rollback(True)
    return outcome


# --- contact erasure (API-17) ----------------------------------------------------------------------------------


def automation_runs_erase_contact(contact: Any) -> None:
    """Erasure hook: the contact's running runs are cancelled (counted, AUT-28) before the cascade deletes them,
    so `stats_active` stays right; their due tasks then find no step run and end as no-ops."""
    from automations.lifecycle import run_cancel

    for run_id in AutomationRun.objects.filter(contact=contact, status=RunStatus.RUNNING).values_list(
        "pk", flat=True
    ):
        run_cancel(run_id)
