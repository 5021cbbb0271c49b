"""The automation email step's send row (AUT-31)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from django.db import transaction

from delivery.models import (
    SendKind,
    TransactionalSend,
)
from delivery.providers import delivery_configured
from delivery.services.pools import sends_enqueue, uuid_or_none
from delivery.services.senders import default_sender
from owlat.models import Contact


@dataclass(frozen=True)
class AutomationEmailResult:
    status: Literal["queued", "skipped", "failed"]
    send_id: str | None = None
    reason: str | None = None


def automation_email_queue(
    *,
    organization_id: str,
    contact_id: str,
    automation_id: str,
    email_template_id: str | None,
    subject_override: str | None = None,
) -> AutomationEmailResult:
    """AUT-31 steps 1–7, in order, inside the caller's transaction. `queued` → a `TransactionalSend` of kind
    `automation` in `queued` and a job on the transactional pool; `skipped` (D-11) → no row; `failed` → the
    AUT-31 message as `reason`."""
    from templates.models import EmailTemplate
    from templates.rendering import contact_variables, personalize_subject, prepare_template

    # 1
    if not email_template_id:
        return AutomationEmailResult("failed", reason="No email template configured")
    # 2
    template_pk = uuid_or_none(email_template_id)
    template = (
        EmailTemplate.objects.filter(pk=template_pk, organization_id=organization_id).first()
        if template_pk
        else None
    )
    if template is None:
        return AutomationEmailResult("failed", reason="Email template not found")
    if not (template.html_content or "").strip():
        return AutomationEmailResult("failed", reason="Email template has no HTML content")
    # 3
    sender = default_sender(organization_id)
    if sender is None:
        return AutomationEmailResult(
            "failed",
            reason="Email sender not configured. Please set a default sender email in organization settings.",
        )
    # 4
    contact = Contact.objects.filter(pk=uuid_or_none(contact_id), organization_id=organization_id).first()
    if contact is None or not (contact.email or "").strip():
        return AutomationEmailResult("failed", reason="Contact has no email address")
    # 5: compose — the subject is personalized now (CR/LF stripped); the body at dispatch from the template.
    variables = contact_variables(contact)
    prepared = prepare_template(template, contact.language)
    subject_source = subject_override if subject_override else None
    subject = (
        personalize_subject(subject_source, variables)
        if subject_source
        else prepared.subject.render(variables, single_line=True)
    )
    # 6
    if not delivery_configured():
        return AutomationEmailResult("failed", reason="No delivery provider configured")
    # 7: D-11 and DLV-13 (marketing scope): complete without a send.
    if contact.unsubscribed_at is not None:
        return AutomationEmailResult("skipped", reason="Contact unsubscribed")
    from owlat.suppression import is_suppressed

    if is_suppressed(organization_id=organization_id, email=contact.email, scope="marketing"):
        return AutomationEmailResult("skipped", reason="Recipient suppressed")
    with transaction.atomic():
        send = TransactionalSend.objects.create(
            organization_id=organization_id,
            kind=SendKind.AUTOMATION,
            email_template=template,
            automation_id=uuid_or_none(automation_id),
            contact=contact,
            email=contact.email,
            subject=subject,
            language=prepared.language,
            data_variables=variables,
            from_email=sender.email,
            from_name=sender.name,
        )
        sends_enqueue("transactional", [send.pk])
    return AutomationEmailResult("queued", send_id=str(send.pk))
