"""Read-only, human-readable step summaries for automations outside draft (their forms are locked, AUT-02)."""

from __future__ import annotations

from typing import Any

from automations.models import AutomationStep, StepType
from owlat.forms.conditions import (
    ACTIVITY_CHOICES,
    ACTIVITY_OPERATOR_CHOICES,
    BUILTIN_LABELS,
    PROPERTY_OPERATOR_CHOICES,
    TOPIC_OPERATOR_CHOICES,
    campaign_condition_summary,
)

_PROPERTY_OPS = dict(PROPERTY_OPERATOR_CHOICES)


def _target(index: Any) -> str:
    return "the next step" if index is None else f"step {index}"


def condition_summary(condition: dict[str, Any], organization_id: Any) -> str:
    kind = condition.get("kind")
    operator = condition.get("operator")
    if kind == "email_activity":
        return (
            f"contact {dict(ACTIVITY_OPERATOR_CHOICES).get(operator, operator)} "
            f"{dict(ACTIVITY_CHOICES).get(condition.get('field'), condition.get('field'))}"
        )
    if kind == "topic_membership":
        from owlat.models import Topic

        topic = Topic.objects.filter(organization_id=organization_id, pk=condition.get("topicId")).first()
        name = f"“{topic.name}”" if topic else "a deleted topic"
        return f"contact {dict(TOPIC_OPERATOR_CHOICES).get(operator, operator)} {name}"
    if kind in ("campaign_activity", "campaign_link"):
        return campaign_condition_summary(condition, organization_id)
    field = condition.get("field")
    text = f"{BUILTIN_LABELS.get(field, field)} {_PROPERTY_OPS.get(operator, operator)}"
    if "value" in condition:
        text += f" “{condition['value']}”"
    return text


def step_summary(step: AutomationStep) -> str:
    """One line an operator can read: what the step does."""
    config = step.config or {}
    try:
        if step.step_type == StepType.EMAIL:
            from templates.models import EmailTemplate

            template = EmailTemplate.objects.filter(
                organization_id=step.organization_id, pk=config.get("emailTemplateId")
            ).first()
            text = f"Send “{template.name}”" if template else "Send a template that no longer exists"
            if config.get("subjectOverride"):
                text += f" with the subject “{config['subjectOverride']}”"
            return text
        if step.step_type == StepType.DELAY:
            duration, unit = config.get("duration"), config.get("unit", "")
            return f"Wait {duration} {unit[:-1] if duration == 1 else unit}"
        if step.step_type == StepType.CONDITION:
            return (
                f"If {condition_summary(config.get('condition') or {}, step.organization_id)}: "
                f"yes → {_target(config.get('yesBranchStepIndex'))}, no → {_target(config.get('noBranchStepIndex'))}"
            )
        if step.step_type == StepType.END:
            return "End: the automation stops here for the contact"
    except (TypeError, ValueError, AttributeError):
        pass
    return "—"
