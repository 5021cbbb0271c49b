"""The contact timeline's send rows (`owlat.timeline`): every mail to the contact with its outcome.

Test sends are in no contact's history. These rows tell more than the `email_sent` activity, which the timeline
then leaves out."""

from __future__ import annotations

from typing import Any

from delivery.models import EmailSend, SendKind, TransactionalSend
from owlat.models import Contact
from owlat.timeline import TimelineRow, admin_link, links, newest


def send_outcome(send: Any) -> str:
    """The status, engagement, bounce and error of a send row, as an operator reads it."""
    parts = [send.status]
    if send.opened_at:
        parts.append("opened")
    if send.clicked_at:
        parts.append("clicked")
    if send.bounce_type:
        parts.append(f"{send.bounce_type} bounce")
    if send.error_message:
        parts.append(send.error_message[:160])
    return " · ".join(dict.fromkeys(parts))


def campaign_send_rows(contact: Contact, limit: int) -> list[TimelineRow]:
    qs = EmailSend.objects.filter(organization_id=contact.organization_id, contact=contact)
    return [
        TimelineRow(
            when=send.queued_at,
            kind="send",
            title=f"Campaign mail “{send.personalized_subject or '—'}”",
            detail=f"variant {send.ab_variant}" if send.ab_variant else "",
            outcome=send_outcome(send),
            links=links(
                admin_link("send", "admin:delivery_emailsend_change", send.pk),
                admin_link("campaign", "admin:campaigns_campaign_change", send.campaign_id),
            ),
        )
        for send in newest(qs, "queued_at")[:limit]
    ]


def other_send_rows(contact: Contact, limit: int) -> list[TimelineRow]:
    qs = TransactionalSend.objects.filter(organization_id=contact.organization_id, contact=contact).exclude(
        kind=SendKind.TEST
    )
    return [
        TimelineRow(
            when=send.queued_at,
            kind="send",
            title=f"{send.get_kind_display().replace('_', ' ').capitalize()} mail “{send.subject or '—'}”",
            outcome=send_outcome(send),
            links=links(
                admin_link("send", "admin:delivery_transactionalsend_change", send.pk),
                admin_link("automation", "admin:automations_automation_change", send.automation_id)
                if send.automation_id
                else None,
            ),
        )
        for send in newest(qs, "queued_at")[:limit]
    ]
