"""The inbox's part of the admin dashboard's "Needs attention" (owlat.admin.dashboard registry, filled in
`InboxConfig.ready()`): quarantined messages and messages waiting for human review (`draft_ready`), and open
agent circuit breakers (AGT-20).

Members see their organization's messages (organization id given); platform staff (organization None) see every
organization's. Each message row links to its admin page in the quarantine or review queue. Bounded queries on
the indexed (organization, processing_status, received_at) filter: at most `SHOWN` rows plus a count each."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from django.urls import reverse

from inbox.models import InboundMessage
from inbox.models import ProcessingStatus as P
from owlat.admin.dashboard import AttentionItem

SHOWN = 5


def _messages(
    organization_id: Any, status: str, *, admin_name: str, title: str, detail: str, more: str
) -> Iterator[AttentionItem]:
    qs = InboundMessage.objects.filter(processing_status=status)
    if organization_id is not None:
        qs = qs.filter(organization_id=organization_id)
    rows = list(qs.order_by("-received_at").values_list("pk", "subject", "from_email")[: SHOWN + 1])
    for pk, subject, sender in rows[:SHOWN]:
        yield AttentionItem(
            title.format(subject=subject or "(no subject)", sender=sender),
            link=reverse(f"admin:inbox_{admin_name}_change", args=[pk]),
            severity="warning",
            detail=detail,
        )
    if len(rows) > SHOWN:
        yield AttentionItem(
            more.format(n=qs.count() - SHOWN),
            link=reverse(f"admin:inbox_{admin_name}_changelist"),
            severity="warning",
        )


def quarantined_messages(organization_id: Any) -> Iterator[AttentionItem]:
    yield from _messages(
        organization_id,
        P.QUARANTINED,
        admin_name="quarantinedmessage",
        title="Message “{subject}” from {sender} is quarantined",
        detail="The security scan flagged it; release it if it is safe, or archive it.",
        more="{n} more quarantined message(s)",
    )


def awaiting_review(organization_id: Any) -> Iterator[AttentionItem]:
    yield from _messages(
        organization_id,
        P.DRAFT_READY,
        admin_name="reviewqueuemessage",
        title="Reply to “{subject}” from {sender} waits for review",
        detail="Approve, edit then approve, or reject the draft in the review queue.",
        more="{n} more message(s) waiting for review",
    )


def open_breakers(organization_id: Any) -> Iterator[AttentionItem]:
    from inbox.breakers import open_breakers_qs

    for breaker in open_breakers_qs(organization_id).select_related("organization")[: SHOWN * 3]:
        yield AttentionItem(
            f"Auto-send paused: circuit breaker “{breaker.kind}” is open"
            + (f" ({breaker.organization.name})" if organization_id is None else ""),
            link=reverse("admin:inbox_circuitbreaker_change", args=[breaker.pk]),
            severity="danger",
            detail=f"{breaker.reason} Every draft goes to human review until it closes; "
            "close it in the admin once the cause is fixed.",
        )
