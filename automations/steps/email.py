"""Email step (AUT-31): queue one automation email through delivery's transactional pool."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from automations.steps import StepConfigError, StepContext, StepOutcome


@dataclass(frozen=True)
class EmailConfig:
    email_template_id: str
    subject_override: str | None


def parse_config(config: Any) -> EmailConfig:
    if not isinstance(config, dict):
        raise StepConfigError("Email config must be an object", None)
    template_id = config.get("emailTemplateId")
    if not isinstance(template_id, str) or not template_id:
        raise StepConfigError("No email template configured", "emailTemplateId")
    subject = config.get("subjectOverride")
    if subject is not None and not isinstance(subject, str):
        raise StepConfigError("subjectOverride must be a string", "subjectOverride")
    return EmailConfig(email_template_id=template_id, subject_override=subject or None)


def canonical_config(config: EmailConfig) -> dict[str, Any]:
    data: dict[str, Any] = {"emailTemplateId": config.email_template_id}
    if config.subject_override:
        data["subjectOverride"] = config.subject_override
    return data


def execute(ctx: StepContext, config: EmailConfig) -> StepOutcome:
    """AUT-31 steps 1–7 live in delivery (`automation_email_queue`); this maps its result to a step outcome.

    queued → completed with the send row id; skipped (suppressed or unsubscribed, D-11) → completed without a
    send, the reason kept as the step run's note; failed → failed with the reason (retried by the walker).
    """
    from delivery.services import automation_email_queue

    result = automation_email_queue(
        organization_id=ctx.organization_id,
        contact_id=ctx.contact_id,
        automation_id=ctx.automation_id,
        email_template_id=config.email_template_id,
        subject_override=config.subject_override,
    )
    if result.status == "queued":
        return StepOutcome.completed(email_send_id=str(result.send_id))
    if result.status == "skipped":
        return StepOutcome.completed(note=result.reason)
    return StepOutcome.failed(result.reason or "Email could not be queued")
