"""What other apps ask of automations through registries: in-use references (API-25, API-26) and contact
erasure (API-17)."""

from __future__ import annotations

from typing import Any

from automations.lifecycle import DRAFT
from automations.models import Automation, AutomationRun, AutomationStep, RunStatus, StepType, TriggerType

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


def automations_using_form(organization_id: Any, form_id: Any) -> list[dict[str, str]]:
    """Non-draft automations with a condition step on "joined through this sign-up form"."""
    live = Automation.objects.filter(organization_id=organization_id).exclude(status=DRAFT)
    ids = (
        AutomationStep.objects.filter(
            automation__in=live, step_type=StepType.CONDITION, config__condition__formId=str(form_id)
        )
        .values_list("automation_id", flat=True)
        .distinct()
    )
    return [{"kind": "automation", "id": str(pk)} for pk in ids]


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


# --- contact erasure (API-17) ----------------------------------------------------------------------------------


def automation_runs_erase_contact(contact: Any) -> None:
    """Erasure hook: the contact's running runs are cancelled (counted, AUT-28) before the cascade deletes them,
    so `stats_active` stays right; their due tasks then find no step run and end as no-ops."""
    from automations.lifecycle import run_cancel

    for run_id in AutomationRun.objects.filter(contact=contact, status=RunStatus.RUNNING).values_list(
        "pk", flat=True
    ):
        run_cancel(run_id)
