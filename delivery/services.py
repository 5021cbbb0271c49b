"""Delivery services: creating send rows and handing them to the pools (DLV-03, DLV-14 … DLV-16, AUT-31,
D-06, D-11), campaign counters and reads (DLV-09, DLV-10), and the hooks delivery registers with the kernel
(DOI mail, unsubscribe attribution, erasure).

Send rows are created here and nowhere else; their `status` is written only by `delivery.lifecycle`.
Everything runs inside the caller's transaction; the pool job is enqueued with it (D-05).

Interface for the campaign engine (which delivery does not import):
- `create_batch(organization_id=, campaign_id=, context=CampaignSendContext(...), sends=[CampaignRecipient...],
  at=None)` → `{contact_id: send_id}` for the rows inserted now (DLV-03), enqueued on the campaign pool (`at`
  delays them, CMP-34);
- `campaign_counters(campaign_id)` (DLV-10, incl. `unsubscribed`) and `campaign_counters_reset(...)` (→ sending);
- `campaign_send_stats(campaign_id, ab_variant=None)` (DLV-09 ever-reached buckets, CMP-20);
- `campaign_has_sends` / `campaign_has_queued_sends` (CMP-13; outcome-unknown rows count as finished, D-07);
- `delivery.lifecycle.register_completion_handler("campaign", try_complete_campaign)` (DLV-18) and
  `register_complaint_handler("campaign", fn)` (DLV-11 content-scan flag);
- `delivery.providers.delivery_configured()` (DLV-22, pre-flight `no_delivery_provider`).
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from django.db import transaction
from django.db.models import Count, F, Q
from django.utils import timezone

from delivery.lifecycle import SendRef, model_for
from delivery.models import (
    CampaignSendCounters,
    CampaignSendSettings,
    EmailSend,
    SendAttachment,
    SendKind,
    SendStatus,
    TransactionalSend,
)
from delivery.providers import delivery_configured
from owlat.models import Contact

logger = logging.getLogger(__name__)

BATCH_SIZE = 100  # D-06: one job dispatches up to 100 rows of its pool over one connection
POOL_FOR_KIND = {"campaign": "campaign", "transactional": "transactional"}
ROW_SCAN_CAP = 10_000  # DLV-09


def pool_for(ref_kind: str) -> str:
    return POOL_FOR_KIND[ref_kind]


def sends_enqueue(ref_kind: str, send_ids: Sequence[Any], *, at: Any = None) -> int:
    """Hand rows to their pool in jobs of up to `BATCH_SIZE` ids (inside the caller's transaction)."""
    from owlat.jobs import enqueue

    ids = [str(i) for i in send_ids]
    jobs = 0
    for start in range(0, len(ids), BATCH_SIZE):
        enqueue(
            "delivery.tasks.send_batch_task",
            ref_kind,
            ids[start : start + BATCH_SIZE],
            at=at,
            queue=pool_for(ref_kind),
        )
        jobs += 1
    return jobs


# --- campaign rows (DLV-01, DLV-03) -----------------------------------------------------------------------


@dataclass(frozen=True)
class CampaignSendContext:
    """Campaign-level composition data, given by the campaign engine with every batch."""

    from_email: str
    from_name: str = ""
    reply_to: str = ""
    topic_id: str | None = None
    topic_name: str = ""
    view_in_browser_url: str = ""
    track: bool = True


@dataclass(frozen=True)
class CampaignRecipient:
    contact_id: str
    email: str
    first_name: str | None = None
    last_name: str | None = None
    email_template_id: str | None = None
    personalized_subject: str | None = None
    language: str | None = None
    ab_variant: str | None = None


def campaign_send_settings_set(
    *, organization_id: Any, campaign_id: Any, context: CampaignSendContext
) -> None:
    CampaignSendSettings.objects.update_or_create(
        campaign_id=campaign_id,
        defaults={
            "organization_id": organization_id,
            "from_email": context.from_email,
            "from_name": context.from_name or "",
            "reply_to": context.reply_to or "",
            "topic_id": context.topic_id or None,
            "topic_name": context.topic_name or "",
            "view_in_browser_url": context.view_in_browser_url or "",
            "track": context.track,
        },
    )
    CampaignSendCounters.objects.get_or_create(
        campaign_id=campaign_id, defaults={"organization_id": organization_id}
    )


def create_batch(
    *,
    organization_id: Any,
    campaign_id: Any,
    context: CampaignSendContext,
    sends: Iterable[CampaignRecipient],
    enqueue: bool = True,
    at: Any = None,
) -> dict[str, str]:
    """DLV-03: insert a row only for contacts without a row for this campaign; return `{contact_id: send_id}`
    for exactly the rows inserted, and (unless `enqueue=False`) enqueue only those on the campaign pool.
    Idempotent: a page processed twice inserts and enqueues nothing the second time."""
    sends = list(sends)
    with transaction.atomic():
        campaign_send_settings_set(organization_id=organization_id, campaign_id=campaign_id, context=context)
        if not sends:
            return {}
        contact_ids = [uuid.UUID(str(s.contact_id)) for s in sends]
        existing = set(
            EmailSend.objects.filter(campaign_id=campaign_id, contact_id__in=contact_ids).values_list(
                "contact_id", flat=True
            )
        )
        now = timezone.now()
        rows: list[EmailSend] = []
        seen: set[uuid.UUID] = set()
        for s in sends:
            cid = uuid.UUID(str(s.contact_id))
            if cid in existing or cid in seen:
                continue
            seen.add(cid)
            rows.append(
                EmailSend(
                    id=uuid.uuid4(),
                    organization_id=organization_id,
                    campaign_id=campaign_id,
                    contact_id=cid,
                    contact_email=s.email,
                    contact_first_name=s.first_name,
                    contact_last_name=s.last_name,
                    personalized_subject=s.personalized_subject,
                    language=s.language,
                    ab_variant=s.ab_variant,
                    email_template_id=s.email_template_id,
                    queued_at=now,
                )
            )
        # ignore_conflicts: a concurrent page inserting the same (campaign, contact) loses quietly; we then
        # re-read which of our ids exist so the result lists exactly the rows this call inserted.
        EmailSend.objects.bulk_create(rows, batch_size=1000, ignore_conflicts=True)
        ids = [r.id for r in rows]
        inserted = set(EmailSend.objects.filter(id__in=ids).values_list("id", flat=True)) if rows else set()
        result = {str(r.contact_id): str(r.id) for r in rows if r.id in inserted}
        if enqueue and result:
            sends_enqueue("campaign", list(result.values()), at=at)
        return result


def campaign_counters(campaign_id: Any) -> dict[str, Any]:
    """DLV-10 counters of a campaign (zeros when it has none yet) and their freshness."""
    row = CampaignSendCounters.objects.filter(campaign_id=campaign_id).first()
    if row is None:
        return {**dict.fromkeys(CampaignSendCounters.COUNTERS, 0), "updated_at": None}
    return {**row.as_dict(), "updated_at": row.updated_at}


def campaign_counters_reset(*, organization_id: Any, campaign_id: Any) -> None:
    """CMP-08: all counters back to 0 when the campaign goes → `sending`."""
    CampaignSendCounters.objects.update_or_create(
        campaign_id=campaign_id,
        defaults={
            "organization_id": organization_id,
            **dict.fromkeys(CampaignSendCounters.COUNTERS, 0),
            "updated_at": timezone.now(),
        },
    )


def campaign_send_stats(campaign_id: Any, *, ab_variant: str | None = None) -> dict[str, int]:
    """DLV-09 "ever reached" buckets from the rows' monotonic timestamps (never the current status); above
    `ROW_SCAN_CAP` rows (or for the whole campaign when the cap is hit) the denormalized counters are used."""
    qs = EmailSend.objects.filter(campaign_id=campaign_id, deleted_at__isnull=True)
    if ab_variant:
        qs = qs.filter(ab_variant=ab_variant)
    total = qs.count()
    if total > ROW_SCAN_CAP and not ab_variant:
        counters = campaign_counters(campaign_id)
        return {k: counters[k] for k in CampaignSendCounters.COUNTERS} | {
            "total": total,
            "queued": qs.filter(status=SendStatus.QUEUED).count(),
            "outcome_unknown": qs.filter(status=SendStatus.QUEUED, outcome_unknown=True).count(),
            "source": "counters",  # type: ignore[dict-item]
        }
    agg = qs.aggregate(
        sent=Count("pk", filter=Q(sent_at__isnull=False)),
        failed=Count("pk", filter=Q(status=SendStatus.FAILED)),
        delivered=Count(
            "pk",
            filter=Q(delivered_at__isnull=False) | Q(opened_at__isnull=False) | Q(clicked_at__isnull=False),
        ),
        opened=Count("pk", filter=Q(opened_at__isnull=False)),
        clicked=Count("pk", filter=Q(clicked_at__isnull=False) | ~Q(clicked_links=[])),
        bounced=Count("pk", filter=Q(bounced_at__isnull=False)),
        hard_bounced=Count("pk", filter=Q(bounced_at__isnull=False, bounce_type="hard")),
        soft_bounced=Count("pk", filter=Q(bounced_at__isnull=False, bounce_type="soft")),
        complained=Count("pk", filter=Q(complained_at__isnull=False)),
        unsubscribed=Count("pk", filter=Q(unsubscribed_at__isnull=False)),
        queued=Count("pk", filter=Q(status=SendStatus.QUEUED)),
        outcome_unknown=Count("pk", filter=Q(status=SendStatus.QUEUED, outcome_unknown=True)),
    )
    return {**agg, "total": total}


def campaign_has_queued_sends(campaign_id: Any, *, count_unknown_as_finished: bool = True) -> bool:
    """CMP-13 helper: is any row still waiting? D-07: an outcome-unknown row counts as finished."""
    qs = EmailSend.objects.filter(campaign_id=campaign_id, status=SendStatus.QUEUED, deleted_at__isnull=True)
    if count_unknown_as_finished:
        qs = qs.filter(outcome_unknown=False)
    return qs.exists()


def campaign_has_sends(campaign_id: Any) -> bool:
    return EmailSend.objects.filter(campaign_id=campaign_id).exists()


# --- sender and provider checks ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Sender:
    email: str
    name: str


def default_sender(organization_id: Any) -> Sender | None:
    from owlat.organizations import organization_settings

    s = organization_settings(organization_id)
    if not (s.default_from_email or "").strip():
        return None
    return Sender(email=s.default_from_email.strip(), name=(s.default_from_name or "").strip())


def sender_domain_problem(organization_id: Any, email: str) -> str | None:
    """DOM-12: None when the address's domain is registered and verified, else the message."""
    from owlat.models import Domain, DomainStatus

    domain = email.rpartition("@")[2].strip().lower()
    row = Domain.objects.filter(organization_id=organization_id, domain__iexact=domain).first()
    if row is None:
        return f'Domain "{domain}" is not registered. Please add it in Settings > Domains.'
    if row.status != DomainStatus.VERIFIED:
        return f'Domain "{domain}" is not verified. Please verify DNS records in Settings > Domains.'
    return None


# --- automation email step (AUT-31) -----------------------------------------------------------------------


@dataclass(frozen=True)
class AutomationEmailResult:
    status: Literal["queued", "skipped", "failed"]
    send_id: str | None = None
    reason: str | None = None


def _uuid_or_none(value: Any) -> uuid.UUID | None:
    try:
        return uuid.UUID(str(value))
    except (TypeError, ValueError, AttributeError):
        return None


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
    template_pk = _uuid_or_none(email_template_id)
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
    contact = Contact.objects.filter(pk=_uuid_or_none(contact_id), organization_id=organization_id).first()
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
            automation_id=_uuid_or_none(automation_id),
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


# --- transactional API intake (DLV-14, API-22) ------------------------------------------------------------


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
    from owlat.contacts import contact_find_or_create, normalize_email
    from owlat.organizations import organization_settings
    from owlat.suppression import is_suppressed
    from templates.models import TransactionalEmail, TransactionalStatus
    from templates.rendering import contact_variables, prepare_template, resolve_language

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
    address = normalize_email(email)
    if is_suppressed(organization_id=organization_id, email=address, scope="transactional"):
        raise IntakeRejected(
            "recipient_blocked",
            "invalid_state",
            "This email address is blocked. The recipient may have previously bounced or filed a complaint.",
        )
    template = None
    if transactional_id:
        pk = _uuid_or_none(transactional_id)
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
        contact, created = contact_find_or_create(
            organization_id=organization_id, email=address, source="transactional", actor=actor, mode="upsert"
        )
        variables = contact_variables(contact, variables_in)
        prepared = prepare_template(template, resolved)
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


# --- other non-campaign sends -----------------------------------------------------------------------------


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
) -> TransactionalSend:
    """A `test` send (admin "send test email", `send_test_email`): runs the lifecycle, emits no effects."""
    from templates.models import EmailTemplate, TransactionalEmail
    from templates.rendering import contact_variables, prepare_template

    if not delivery_configured():
        raise ValueError("No delivery provider configured")
    sender = default_sender(organization_id)
    from django.conf import settings

    from_email = sender.email if sender else settings.DEFAULT_FROM_EMAIL
    from_name = sender.name if sender else ""
    contact = (
        Contact.objects.filter(pk=_uuid_or_none(contact_id), organization_id=organization_id).first()
        if contact_id
        else None
    )
    variables = contact_variables(contact) if contact else {"email": to, "firstName": "", "lastName": ""}
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
            inbound_message_id=_uuid_or_none(inbound_message_id),
            contact_id=_uuid_or_none(contact_id),
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


# --- kernel hooks (registered in DeliveryConfig.ready) ----------------------------------------------------


def doi_email_queue(contact_id: str, topic_ids: list[str]) -> str | None:
    """DOM-08: a double opt-in started → queue the confirmation mail (inside the subscribe transaction).
    Returns the send id, or None when it cannot be sent (no address, no provider, suppressed)."""
    from django.conf import settings

    from delivery.pages import doi_email_content
    from owlat.suppression import is_suppressed

    contact = Contact.objects.filter(pk=contact_id).select_related("organization").first()
    if contact is None or not contact.email or not contact.doi_confirmation_token:
        return None
    if not delivery_configured():
        logger.warning(
            "double opt-in mail for contact %s not sent: no delivery provider configured", contact_id
        )
        return None
    if is_suppressed(organization_id=contact.organization_id, email=contact.email, scope="transactional"):
        return None
    sender = default_sender(contact.organization_id)
    subject, html, text = doi_email_content(contact, topic_ids)
    send = TransactionalSend.objects.create(
        organization_id=contact.organization_id,
        kind=SendKind.TRANSACTIONAL,
        contact=contact,
        email=contact.email,
        subject=subject,
        language=contact.language,
        from_email=sender.email if sender else settings.DEFAULT_FROM_EMAIL,
        from_name=sender.name if sender else contact.organization.name,
        html_body=html,
        text_body=text,
        correlation_id="doi_confirmation",
    )
    sends_enqueue("transactional", [send.pk])
    return str(send.pk)


def on_unsubscribe(contact: Contact, source: str, campaign_send_id: str | None) -> None:
    """DLV-21 attribution: the send row's `unsubscribed_at` once, and the campaign's `unsubscribed` counter for
    the public email link (DOM-08 table)."""
    if not campaign_send_id:
        return
    pk = _uuid_or_none(campaign_send_id)
    if pk is None:
        return
    now = timezone.now()
    row = EmailSend.objects.filter(
        pk=pk, organization_id=contact.organization_id, contact_id=contact.pk
    ).first()
    if row is not None:
        first = EmailSend.objects.filter(pk=pk, unsubscribed_at__isnull=True).update(unsubscribed_at=now)
        if first and source == "public_email_link":
            CampaignSendCounters.objects.get_or_create(
                campaign_id=row.campaign_id, defaults={"organization_id": row.organization_id}
            )
            CampaignSendCounters.objects.filter(campaign_id=row.campaign_id).update(
                unsubscribed=F("unsubscribed") + 1, updated_at=now
            )
        return
    TransactionalSend.objects.filter(
        pk=pk, organization_id=contact.organization_id, contact_id=contact.pk, unsubscribed_at__isnull=True
    ).update(unsubscribed_at=now)


def send_lookup(ref: SendRef, *, organization_id: Any = None) -> Any:
    model = model_for(ref.kind)
    qs = model.objects.filter(pk=_uuid_or_none(ref.id))
    if organization_id is not None:
        qs = qs.filter(organization_id=organization_id)
    return qs.first()


def sends_resend_unknown(ref_kind: str, send_ids: Sequence[Any]) -> int:
    """D-07 explicit operator re-send: clear the hand-off of outcome-unknown rows and hand them to their pool.
    The recipient may get the message twice; that is the operator's decision."""
    from delivery.lifecycle import reset_for_resend

    with transaction.atomic():
        reset = [str(pk) for pk in send_ids if reset_for_resend(ref_kind, str(pk))]
        if reset:
            sends_enqueue(ref_kind, reset)
    return len(reset)
