"""Transactional API intake (DLV-14, API-22): validation, contact resolution, send row and attachments."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from django.db import transaction

from delivery.models import (
    SendAttachment,
    SendKind,
    TransactionalSend,
)
from delivery.providers import delivery_configured
from delivery.services.pools import sends_enqueue, uuid_or_none
from delivery.services.senders import Sender, sender_domain_problem
from owlat.models import Contact

MAX_SUBJECT_LENGTH = 998  # the column, and RFC 5322's line limit
SUBJECT_TOO_LONG = (
    f"The subject rendered with these dataVariables is longer than {MAX_SUBJECT_LENGTH} characters"
)


class IntakeRejected(Exception):
    """A DLV-14 rejection: no row written. `category` per API-22."""

    def __init__(self, reason: str, category: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason
        self.category = category
        self.message = message


@dataclass(frozen=True)
class AttachmentInput:
    filename: str
    content: bytes | None = None
    url: str | None = None
    content_type: str | None = None


@dataclass(frozen=True)
class TransactionalIntake:
    send: TransactionalSend
    contact: Contact
    contact_created: bool
    slug: str
    language: str


_CONTACT_VARIABLES = frozenset({"email", "firstName", "lastName"})


def _missing_variables(template: Any, language: str, provided: dict[str, Any]) -> list[str]:
    """Variables the template uses without a fallback that neither the request nor the contact provides."""
    from templates.rendering import prepare_template

    prepared = prepare_template(template, language)
    needed: list[str] = []
    for compiled in (prepared.subject, prepared.html):
        for name, fallback in compiled.slots:
            if (
                fallback is None
                and name not in _CONTACT_VARIABLES
                and name not in provided
                and name not in needed
            ):
                needed.append(name)
    return needed


def transactional_send_create(
    *,
    organization_id: Any,
    email: str,
    actor: str,
    transactional_id: str | None = None,
    slug: str | None = None,
    data_variables: dict[str, Any] | None = None,
    language: str | None = None,
    attachments: Sequence[AttachmentInput] = (),
) -> TransactionalIntake:
    """DLV-14 checks in order (each raises `IntakeRejected`, nothing written), then upsert the contact
    (source `transactional`), resolve the language (request → contact → template default), insert the
    `queued` row and enqueue it on the transactional pool."""
    from owlat.contacts import normalize_email
    from templates.rendering import resolve_language

    address = normalize_email(email)
    settings_row = _organization_may_send(organization_id, address)
    template = _published_template(organization_id, transactional_id, slug)
    sender = _default_sender(organization_id, settings_row)
    variables_in = dict(data_variables or {})
    existing = Contact.objects.filter(
        organization_id=organization_id, email=address, deleted_at__isnull=True
    ).first()
    requested_language = language or (existing.language if existing else None) or template.default_language
    resolved = resolve_language(template, requested_language)
    missing = _missing_variables(template, resolved, variables_in)
    if missing:
        raise IntakeRejected(
            "invalid_variables", "invalid_input", "Missing required data variables: " + ", ".join(missing)
        )
    with transaction.atomic():
        return _store_send(
            organization_id=organization_id,
            email=email,
            actor=actor,
            template=template,
            language=resolved,
            sender=sender,
            variables_in=variables_in,
            attachments=attachments,
        )


def _organization_may_send(organization_id: Any, address: str) -> Any:
    """DLV-14 1–3: the organization is not blocked, a provider is configured, the recipient is not suppressed.
    Answers the organization's settings row."""
    from owlat.organizations import organization_settings
    from owlat.suppression import is_suppressed

    settings_row = organization_settings(organization_id)
    if settings_row.sending_blocked:
        raise IntakeRejected(
            "abuse_blocked",
            "forbidden",
            "Your account has been suspended. Please contact support for assistance.",
        )
    if not delivery_configured():
        raise IntakeRejected(
            "no_delivery_provider",
            "invalid_state",
            "No delivery provider configured. Please configure an email provider before sending.",
        )
    if is_suppressed(organization_id=organization_id, email=address, scope="transactional"):
        raise IntakeRejected(
            "recipient_blocked",
            "invalid_state",
            "This email address is blocked. The recipient may have previously bounced or filed a complaint.",
        )
    return settings_row


def _published_template(organization_id: Any, transactional_id: str | None, slug: str | None) -> Any:
    """DLV-14 4–6: the organization's transactional email by id (else by slug), published, with content."""
    from templates.models import TransactionalEmail, TransactionalStatus

    template = None
    if transactional_id:
        pk = uuid_or_none(transactional_id)
        if pk is not None:
            template = TransactionalEmail.objects.filter(pk=pk, organization_id=organization_id).first()
        if template is None:
            raise IntakeRejected(
                "template_not_found",
                "not_found",
                f'Transactional email with ID "{transactional_id}" not found',
            )
    else:
        template = TransactionalEmail.objects.filter(organization_id=organization_id, slug=slug or "").first()
        if template is None:
            raise IntakeRejected(
                "template_not_found", "not_found", f'Transactional email with slug "{slug}" not found'
            )
    if template.status != TransactionalStatus.PUBLISHED:
        raise IntakeRejected(
            "template_not_published",
            "invalid_state",
            f'Transactional email "{template.slug}" is not published. Please publish it before sending.',
        )
    if not (template.html_content or "").strip():
        raise IntakeRejected(
            "template_no_content",
            "invalid_state",
            f'Transactional email "{template.slug}" has no HTML content. Please save and publish it first.',
        )
    return template


def _default_sender(organization_id: Any, settings_row: Any) -> Sender:
    """DLV-14 7: the organization's default sender, on a verified domain."""
    sender = Sender(
        email=settings_row.default_from_email.strip(), name=(settings_row.default_from_name or "").strip()
    )
    if not sender.email:
        raise IntakeRejected(
            "domain_unverified",
            "invalid_state",
            "Email sender not configured. Please set a default sender email in organization settings.",
        )
    problem = sender_domain_problem(organization_id, sender.email)
    if problem:
        raise IntakeRejected("domain_unverified", "invalid_state", problem)
    return sender


def _store_send(
    *,
    organization_id: Any,
    email: str,
    actor: str,
    template: Any,
    language: str,
    sender: Sender,
    variables_in: dict[str, Any],
    attachments: Sequence[AttachmentInput],
) -> TransactionalIntake:
    """Upsert the contact, render the subject, insert the `queued` row and its attachments, enqueue it (inside
    the caller's transaction)."""
    from owlat.contacts import contact_find_or_create, normalize_email
    from templates.rendering import contact_variables, prepare_template

    contact, created = contact_find_or_create(
        organization_id=organization_id,
        email=normalize_email(email),
        source="transactional",
        actor=actor,
        mode="upsert",
    )
    variables = contact_variables(contact, variables_in)
    prepared = prepare_template(template, language)
    subject = prepared.subject.render(variables, single_line=True)
    if len(subject) > MAX_SUBJECT_LENGTH:  # the data variables made it longer than a subject may be
        raise IntakeRejected("subject_too_long", "invalid_input", SUBJECT_TOO_LONG)
    send = TransactionalSend.objects.create(
        organization_id=organization_id,
        kind=SendKind.TRANSACTIONAL,
        transactional_email=template,
        contact=contact,
        email=email.strip(),
        subject=subject,
        language=prepared.language,
        data_variables=variables_in or None,
        from_email=sender.email,
        from_name=sender.name,
    )
    for position, att in enumerate(attachments):
        SendAttachment.objects.create(
            organization_id=organization_id,
            send=send,
            position=position,
            filename=att.filename,
            content_type=att.content_type,
            content=att.content,
            url=att.url,
            size=len(att.content or b""),
        )
    sends_enqueue("transactional", [send.pk])
    return TransactionalIntake(
        send=send, contact=contact, contact_created=created, slug=template.slug, language=prepared.language
    )
