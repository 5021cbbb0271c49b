"""The contact timeline's inbound mail rows (`owlat.timeline`): what the contact wrote and where it stands."""

from __future__ import annotations

from inbox.models import InboundMessage
from owlat.models import Contact
from owlat.timeline import TimelineRow, admin_link, links, newest


def inbound_rows(contact: Contact, limit: int) -> list[TimelineRow]:
    """Messages from the contact with their processing status (one query, no bodies read)."""
    qs = InboundMessage.objects.filter(organization_id=contact.organization_id, contact=contact).only(
        "id", "subject", "from_email", "processing_status", "received_at"
    )
    return [
        TimelineRow(
            when=message.received_at,
            kind="inbox",
            title=f"Mail received “{message.subject or '(no subject)'}”",
            detail=f"from {message.from_email}",
            outcome=message.get_processing_status_display(),
            links=links(admin_link("message", "admin:inbox_inboundmessage_change", message.pk)),
        )
        for message in newest(qs, "received_at")[:limit]
    ]
