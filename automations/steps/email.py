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


def execute_many(items: list[tuple[StepContext, EmailConfig]]) -> list[StepOutcome | Exception]:
    """A walker batch through delivery's batch variant: templates, senders, contacts and suppressions read once;
    a queued row is only prepared here (`outcome.pending`) and written by `commit_many` once its completion is
    applied."""
    from delivery.services import AutomationEmailRequest, automation_email_prepare_many

    results = automation_email_prepare_many(
        [
            AutomationEmailRequest(
                organization_id=ctx.organization_id,
                contact_id=ctx.contact_id,
                automation_id=ctx.automation_id,
                email_template_id=config.email_template_id,
                subject_override=config.subject_override,
                contact=ctx.contact,
            )
            for ctx, config in items
        ]
    )
    out: list[StepOutcome | Exception] = []
    for result in results:
        if result.status == "queued":
            out.append(StepOutcome.completed(email_send_id=str(result.send_id), pending=result.send))
        elif result.status == "skipped":
            out.append(StepOutcome.completed(note=result.reason))
        else:
            out.append(StepOutcome.failed(result.reason or "Email could not be queued"))
    return out


def commit_many(pending: list[Any]) -> None:
    """Insert the prepared send rows of the completed email steps and hand them to the transactional pool."""
    from delivery.services import automation_email_insert_many

    automation_email_insert_many(pending)
