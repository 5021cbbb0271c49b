"""The inbox's part of the admin dashboard's "Needs attention" (owlat.admin.dashboard registry, filled in
`InboxConfig.ready()`): quarantined messages, messages waiting for human review (`draft_ready`), failed,
abandoned and stuck messages (each with a Retry button, and "Retry all…" to a confirmation page; the retry
service is `inbox.retry`), mail waiting while the agent is off, and open agent circuit breakers (AGT-20).

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


_RETRY_TITLES = {
    "failed": "Message “{subject}” from {sender} failed",
    "abandoned": "Message “{subject}” from {sender} was given up after its retries",
    "stuck": "Message “{subject}” from {sender} is stuck in {status}",
}
_RETRY_DETAILS = {
    "failed": "A step failed; it is retried automatically every 5 minutes, or retry it now.",
    "abandoned": "A step failed on every attempt; fix the cause (model provider, settings), then retry.",
    "stuck": "No progress for 15 minutes: its task was lost. Retry enqueues the step again.",
}


def needs_retry_messages(organization_id: Any) -> Iterator[AttentionItem]:
    """Failed, abandoned and stuck messages, each with a Retry button (it resumes at the failed step); a
    "Retry all" line leads to the bulk confirmation page."""
    from inbox.retry import kind_of, needs_retry

    qs = needs_retry(organization_id)
    rows = list(qs[: SHOWN + 1])
    for m in rows[:SHOWN]:
        kind = kind_of(m)
        yield AttentionItem(
            _RETRY_TITLES[kind].format(
                subject=m.subject or "(no subject)",
                sender=m.from_email,
                status=m.get_processing_status_display().lower(),
            ),
            link=reverse("admin:inbox_inboundmessage_change", args=[m.pk]),
            severity="danger" if kind == "abandoned" else "warning",
            detail=_RETRY_DETAILS[kind],
            action_url=reverse("admin:inbox_inboundmessage_verb", args=[m.pk, "retry"]),
            action_label="Retry",
        )
    if rows:
        n = qs.count()
        yield AttentionItem(
            f"Retry all {n} failed or stuck message(s)…",
            link=reverse("admin:inbox_inboundmessage_retry_bulk", args=["stuck"]),
            severity="warning",
            detail="Shows what will be retried and asks for confirmation.",
        )


def waiting_while_off(organization_id: Any) -> Iterator[AttentionItem]:
    """Mail stored while the agent was off: why it waits, or (once on) a link to process it."""
    from inbox.retry import pipeline_off_reason, waiting

    if organization_id is None:
        return
    n = waiting(organization_id).count()
    if not n:
        return
    reason = pipeline_off_reason(organization_id)
    yield AttentionItem(
        f"{n} inbound message(s) wait unprocessed",
        link=reverse("admin:inbox_inboundmessage_retry_bulk", args=["waiting"])
        if reason is None
        else reverse("admin:inbox_inboundmessage_changelist") + "?processing_status__exact=received",
        severity="info",
        detail=reason or "The agent is on: process them now (a confirmation page follows).",
    )
