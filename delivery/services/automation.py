"""The automation email step's send row (AUT-31)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from django.db import connection, transaction

from delivery.models import (
    SendKind,
    TransactionalSend,
)
from delivery.providers import delivery_configured
from delivery.services.pools import sends_enqueue, uuid_or_none
from delivery.services.senders import default_sender
from delivery.sql import transactional_sends_insert
from owlat.models import Contact
from owlat.sql import prepared_models


@dataclass(frozen=True)
class AutomationEmailResult:
    status: Literal["queued", "skipped", "failed"]
    send_id: str | None = None
    reason: str | None = None
    #: From `automation_email_prepare_many`: the queued row, built but not inserted yet.
    send: Any = field(default=None, compare=False, repr=False)


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
        send = _automation_send(
            organization_id, template, automation_id, contact, subject, prepared, variables, sender
        )
        send.save(force_insert=True)
        sends_enqueue("transactional", [send.pk])
    return AutomationEmailResult("queued", send_id=str(send.pk))


# --- The batch variant: one walker batch, one insert, one pool job per 100 rows ---------------


@dataclass(frozen=True)
class AutomationEmailRequest:
    """One email step of a batch; `contact` is the contact as the caller loaded it (not read again)."""

    organization_id: str
    contact_id: str
    automation_id: str
    email_template_id: str | None
    subject_override: str | None = None
    contact: Any = None


def automation_email_prepare_many(requests: Sequence[AutomationEmailRequest]) -> list[AutomationEmailResult]:
    """AUT-31 steps 1–7 for many requests, in the single variant's order and with its messages, reading the
    templates, senders, contacts and suppressions once for the batch; nothing is written. A `queued` result
    carries its row (id assigned, not inserted) as `send`: `automation_email_insert_many` writes the rows the
    caller keeps. One result per request, in order."""
    reads = _batch_reads(requests)
    return [_prepare_one(r, reads) for r in requests]


@dataclass
class _BatchReads:
    """What a batch of requests reads once: templates by pk, contacts not given on their request, the senders
    per organization (filled as they are needed), whether delivery is configured, the suppressed addresses."""

    templates: dict[Any, Any]
    contacts: dict[Any, Any]
    configured: bool
    blocked: set[tuple[str, str]]
    senders: dict[str, Any] = field(default_factory=dict)

    def contact_of(self, r: AutomationEmailRequest) -> Any:
        return r.contact if r.contact is not None else self.contacts.get(uuid_or_none(r.contact_id))

    def sender_of(self, org: str) -> Any:
        if org not in self.senders:
            self.senders[org] = default_sender(org)
        return self.senders[org]


def _batch_reads(requests: Sequence[AutomationEmailRequest]) -> _BatchReads:
    from owlat.contacts import normalize_email

    template_pks = {uuid_or_none(r.email_template_id) for r in requests if r.email_template_id} - {None}
    organizations = {str(r.organization_id) for r in requests}
    templates = {t.pk: t for t in _templates(template_pks, organizations)} if template_pks else {}
    missing = [uuid_or_none(r.contact_id) for r in requests if r.contact is None]
    loaded = {c.pk: c for c in Contact.objects.filter(pk__in=[m for m in missing if m])} if missing else {}
    configured = delivery_configured()
    addresses = {
        (str(r.organization_id), normalize_email(c.email))
        for r in requests
        if (c := r.contact or loaded.get(uuid_or_none(r.contact_id))) is not None and (c.email or "").strip()
    }
    blocked = _blocked(addresses) if addresses else set()
    return _BatchReads(templates=templates, contacts=loaded, configured=configured, blocked=blocked)


def _prepare_one(r: AutomationEmailRequest, reads: _BatchReads) -> AutomationEmailResult:
    """AUT-31 steps 1–7 for one request of the batch."""
    from owlat.contacts import normalize_email
    from templates.rendering import contact_variables, personalize_subject, prepare_template

    org = str(r.organization_id)
    # 1
    if not r.email_template_id:
        return AutomationEmailResult("failed", reason="No email template configured")
    # 2
    template = reads.templates.get(uuid_or_none(r.email_template_id))
    if template is None or str(template.organization_id) != org:
        return AutomationEmailResult("failed", reason="Email template not found")
    if not (template.html_content or "").strip():
        return AutomationEmailResult("failed", reason="Email template has no HTML content")
    # 3
    sender = reads.sender_of(org)
    if sender is None:
        return AutomationEmailResult(
            "failed",
            reason="Email sender not configured. Please set a default sender email in organization settings.",
        )
    # 4
    contact = reads.contact_of(r)
    if contact is None or str(contact.organization_id) != org or not (contact.email or "").strip():
        return AutomationEmailResult("failed", reason="Contact has no email address")
    # 5
    variables = contact_variables(contact)
    prepared = prepare_template(template, contact.language)
    subject = (
        personalize_subject(r.subject_override, variables)
        if r.subject_override
        else prepared.subject.render(variables, single_line=True)
    )
    # 6
    if not reads.configured:
        return AutomationEmailResult("failed", reason="No delivery provider configured")
    # 7
    if contact.unsubscribed_at is not None:
        return AutomationEmailResult("skipped", reason="Contact unsubscribed")
    if (org, normalize_email(contact.email)) in reads.blocked:
        return AutomationEmailResult("skipped", reason="Recipient suppressed")
    send = _new_send(
        organization_id=org,
        kind=SendKind.AUTOMATION,
        email_template_id=template.pk,
        automation_id=uuid_or_none(r.automation_id),
        contact_id=contact.pk,
        email=contact.email,
        subject=subject,
        language=prepared.language,
        data_variables=variables,
        from_email=sender.email,
        from_name=sender.name,
    )
    return AutomationEmailResult("queued", send_id=str(send.pk), send=send)


def _templates(pks: set[Any], organizations: set[str]) -> list[Any]:
    """The batch's email templates among `pks` of its organizations: on PostgreSQL one prepared statement (the
    same text every batch), elsewhere the ORM's query."""
    from templates.models import EmailTemplate

    if connection.vendor == "postgresql":
        return prepared_models(
            EmailTemplate,
            "id = ANY(%s::uuid[]) AND organization_id = ANY(%s::uuid[])",
            [[str(pk) for pk in pks], sorted(organizations)],
        )
    return list(EmailTemplate.objects.filter(pk__in=pks, organization_id__in=organizations))


def _blocked(addresses: set[tuple[str, str]]) -> set[tuple[str, str]]:
    """(organization id, normalized address) of `addresses` on their organization's suppression list (one
    query over the unique (organization, email) index)."""
    from owlat.models import BlockedEmail

    organizations, emails = sorted({a[0] for a in addresses}), sorted({a[1] for a in addresses})
    rows = BlockedEmail.objects.filter(organization_id__in=organizations, email__in=emails).values_list(
        "organization_id", "email"
    )
    return {(str(org), email) for org, email in rows}


def automation_email_insert_many(sends: Sequence[TransactionalSend]) -> int:
    """Insert prepared rows (one statement per 500) and hand them to the transactional pool, inside the
    caller's transaction; returns how many were inserted."""
    if not sends:
        return 0
    with transaction.atomic(savepoint=False):
        if connection.vendor == "postgresql":
            transactional_sends_insert(list(sends))
        else:
            TransactionalSend.objects.bulk_create(list(sends), batch_size=500)
        sends_enqueue("transactional", [s.pk for s in sends])
    return len(sends)


def automation_email_queue_many(requests: Sequence[AutomationEmailRequest]) -> list[AutomationEmailResult]:
    """The batch variant of `automation_email_queue`: prepare every request, insert the queued rows at once."""
    results = automation_email_prepare_many(requests)
    automation_email_insert_many([r.send for r in results if r.send is not None])
    return results


def _new_send(**values: Any) -> TransactionalSend:
    """`_automation_send`'s row for the batch variant (every other field its default)."""
    return TransactionalSend(**values)


def _automation_send(
    organization_id: Any,
    template: Any,
    automation_id: Any,
    contact: Contact,
    subject: str,
    prepared: Any,
    variables: dict[str, Any],
    sender: Any,
) -> TransactionalSend:
    """An automation's send row (not inserted yet): the template's subject rendered for the contact, in their
    language, from the organization's default sender."""
    return TransactionalSend(
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
