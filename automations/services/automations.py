"""Automation writes other than status (AUT-01, AUT-02): create, edit, delete, duplicate; operator transitions."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.db import transaction
from django.utils import timezone

from automations.lifecycle import ACTIVE, DRAFT
from automations.models import Automation, AutomationStep
from automations.services.validation import (
    _UNSET,
    DELETE_ACTIVE_MESSAGE,
    NOT_DRAFT_TRIGGER_MESSAGE,
    AutomationInvalid,
    AutomationRefused,
    validate_step,
    validate_trigger,
)


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
    unsubscribe_footer: bool = True,
    track_engagement: bool = False,
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
            unsubscribe_footer=bool(unsubscribe_footer),
            track_engagement=bool(track_engagement),
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


def automation_update(
    *,
    automation_id: Any,
    organization_id: Any,
    name: Any = _UNSET,
    description: Any = _UNSET,
    trigger_type: Any = _UNSET,
    trigger_config: Any = _UNSET,
    unsubscribe_footer: Any = _UNSET,
    track_engagement: Any = _UNSET,
) -> Automation:
    """Name, description and the mail switches in any state; trigger type/config only in
    `draft` (AUT-02)."""
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
        for field, value in (
            ("unsubscribe_footer", unsubscribe_footer),
            ("track_engagement", track_engagement),
        ):
            if value is not _UNSET:
                if not isinstance(value, bool):
                    raise AutomationInvalid(f"{field} must be a boolean", field)
                setattr(automation, field, value)
                fields.append(field)
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
            unsubscribe_footer=source.unsubscribe_footer,
            track_engagement=source.track_engagement,
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


# --- operator transitions (the `automation_transition` command) ----------------------------------------------------


def automation_transition_operator(
    *, automation_id: Any, verb: str, actor: str, dry_run: bool = False
) -> Any:
    """Run a public lifecycle action (AUT-13) for an operator; with `dry_run` everything is rolled back
    (no status change, no audit row, no analytics event) and the outcome says what would have happened."""
    from automations.lifecycle import PUBLIC_ACTIONS
    from owlat.lifecycle import Outcome
    from owlat.permissions import Authority

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
            automation_id=automation_id,
            organization_id=organization_id,
            actor=actor,
            authority=Authority.operator(),
        )
        if dry_run:
            transaction.set_rollback(True)
    return outcome
