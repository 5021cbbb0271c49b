"""Structural step edits, draft only (AUT-02): add, update, remove, reorder, with branch targets remapped."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.db import transaction
from django.db.models import F

from automations.lifecycle import DRAFT
from automations.models import Automation, AutomationStep, StepType
from automations.services.automations import _lock, _touch
from automations.services.validation import (
    _UNSET,
    NOT_DRAFT_STEP_MESSAGES,
    AutomationInvalid,
    AutomationRefused,
    validate_step,
)

_SHIFT = 1_000_000  # temporary offset that keeps (automation, step_index) unique while indexes move


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
