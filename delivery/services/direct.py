"""Sends outside campaigns, automations and the transactional API: operator test emails and agent replies
(AGT-23)."""

from __future__ import annotations

from typing import Any

from django.db import transaction

from delivery.models import (
    SendKind,
    TransactionalSend,
)
from delivery.providers import delivery_configured
from delivery.services.pools import sends_enqueue, uuid_or_none
from delivery.services.senders import default_sender
from owlat.models import Contact


def recipient_links(*, organization_id: Any, contact_id: Any) -> dict[str, str]:
    """A contact's unsubscribe and preference-centre links, as their mail carries them (previews, tests)."""
    from delivery import tokens

    if not tokens.site_url():
        return {}
    return {
        "unsubscribeUrl": tokens.unsubscribe_url(organization_id=organization_id, contact_id=contact_id),
        "preferencesUrl": tokens.preferences_url(organization_id=organization_id, contact_id=contact_id),
    }


def test_email_send(
    *,
    organization_id: Any,
    to: str,
    email_template_id: Any = None,
    transactional_email_id: Any = None,
    contact_id: Any = None,
    language: str | None = None,
    subject: str | None = None,
    html: str | None = None,
    text: str | None = None,
    from_email: str | None = None,
    from_name: str | None = None,
) -> TransactionalSend:
    """A `test` send (admin "send test email", `send_test_email`): runs the lifecycle, emits no effects."""
    from templates.models import EmailTemplate, TransactionalEmail
    from templates.rendering import contact_variables, prepare_template

    if not delivery_configured():
        raise ValueError("No delivery provider configured")
    sender = default_sender(organization_id)
    from django.conf import settings

    if not from_email:
        from_email = sender.email if sender else settings.DEFAULT_FROM_EMAIL
        from_name = from_name or (sender.name if sender else "")
    contact = (
        Contact.objects.filter(pk=uuid_or_none(contact_id), organization_id=organization_id).first()
        if contact_id
        else None
    )
    variables = contact_variables(contact) if contact else {"email": to, "firstName": "", "lastName": ""}
    # the footer as the contact's own mail has it: their working links, the organization's postal address
    from owlat.models import Organization

    if contact is not None:
        variables.update(recipient_links(organization_id=organization_id, contact_id=contact.pk))
    address = Organization.objects.filter(pk=organization_id).values_list("postal_address", flat=True).first()
    variables["postalAddress"] = address or ""
    template = None
    tx_template = None
    if email_template_id:
        template = EmailTemplate.objects.get(pk=email_template_id, organization_id=organization_id)
    if transactional_email_id:
        tx_template = TransactionalEmail.objects.get(
            pk=transactional_email_id, organization_id=organization_id
        )
    html_body, text_body, final_subject = html, text, subject
    chosen = template or tx_template
    if chosen is not None and not html:
        from templates.rendering import render_prepared

        rendered = render_prepared(prepare_template(chosen, language), variables, subject_override=subject)
        html_body, text_body, final_subject = rendered.html, rendered.text, rendered.subject
    if not (html_body or text_body):
        raise ValueError("Nothing to send: give a template or content")
    with transaction.atomic():
        send = TransactionalSend.objects.create(
            organization_id=organization_id,
            kind=SendKind.TEST,
            email_template=template,
            transactional_email=tx_template,
            contact=contact,
            email=to.strip(),
            subject=(final_subject or "Test email").replace("\r", " ").replace("\n", " "),
            language=language,
            from_email=from_email,
            from_name=from_name,
            html_body=html_body,
            text_body=text_body,
        )
        sends_enqueue("transactional", [send.pk])
    return send


def agent_reply_queue(
    *,
    organization_id: Any,
    inbound_message_id: Any,
    to: str,
    subject: str,
    html: str | None,
    text: str | None,
    in_reply_to: str | None = None,
    references: str | None = None,
    contact_id: Any = None,
    from_email: str | None = None,
    from_name: str | None = None,
) -> tuple[str, str | None]:
    """AGT-22: queue an agent reply (transactional scope). Returns ("queued", send_id) or ("failed", reason)."""
    from owlat.suppression import is_suppressed

    if not delivery_configured():
        return ("failed", "No delivery provider configured")
    if is_suppressed(organization_id=organization_id, email=to, scope="transactional"):
        return ("failed", "Recipient suppressed")
    sender = default_sender(organization_id)
    if not from_email and sender is None:
        return (
            "failed",
            "Email sender not configured. Please set a default sender email in organization settings.",
        )
    headers: dict[str, str] = {}
    if in_reply_to:
        headers["In-Reply-To"] = in_reply_to
    if references or in_reply_to:
        headers["References"] = references or in_reply_to or ""
    with transaction.atomic():
        send = TransactionalSend.objects.create(
            organization_id=organization_id,
            kind=SendKind.AGENT_REPLY,
            inbound_message_id=uuid_or_none(inbound_message_id),
            contact_id=uuid_or_none(contact_id),
            email=to,
            subject=subject.replace("\r", " ").replace("\n", " "),
            from_email=from_email or (sender.email if sender else ""),
            from_name=from_name if from_name is not None else (sender.name if sender else ""),
            html_body=html,
            text_body=text,
            extra_headers=headers,
        )
        sends_enqueue("transactional", [send.pk])
    return ("queued", str(send.pk))
