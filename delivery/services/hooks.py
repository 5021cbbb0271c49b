"""The hooks delivery registers with the kernel in `DeliveryConfig.ready()`: the DOI mail and unsubscribe
attribution (erasure: `delivery.erasure`)."""

from __future__ import annotations

import logging
from typing import Any

from django.db.models import F
from django.utils import timezone

from delivery.models import (
    CampaignSendCounters,
    EmailSend,
    SendKind,
    TransactionalSend,
)
from delivery.providers import delivery_configured
from delivery.services.pools import sends_enqueue, uuid_or_none
from delivery.services.senders import default_sender
from owlat.models import Contact

logger = logging.getLogger(__name__)


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
    pk = uuid_or_none(campaign_send_id)
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


def system_email_queue(
    *, organization_id: Any, to: str, subject: str, text: str, correlation_id: str
) -> str | None:
    """A plain mail of the installation to one address (owlat.registry's system mail, e.g. an invitation link),
    from the organization's default sender, as a transactional send. None without a provider or when the address
    is suppressed."""
    from django.conf import settings

    from owlat.suppression import is_suppressed

    if not delivery_configured():
        logger.warning("%s mail not sent: no delivery provider configured", correlation_id)
        return None
    if is_suppressed(organization_id=organization_id, email=to, scope="transactional"):
        return None
    sender = default_sender(organization_id)
    send = TransactionalSend.objects.create(
        organization_id=organization_id,
        kind=SendKind.TRANSACTIONAL,
        email=to,
        subject=subject,
        from_email=sender.email if sender else settings.DEFAULT_FROM_EMAIL,
        from_name=sender.name if sender else "",
        text_body=text,
        correlation_id=correlation_id,
    )
    sends_enqueue("transactional", [send.pk])
    return str(send.pk)
