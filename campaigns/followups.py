"""Follow-ups of a sent campaign: a new draft to the recipients who did not open it, and the retry of the rows
that failed for a transient reason. Each writes its audit row in the same transaction as its change.

The non-openers' audience is a segment of its own ("received X and has not opened X", in the condition
language) that the new draft names with its filters frozen at creation (CMP-28), so editing the segment later
does not change who the follow-up goes to; at send time the filters are evaluated again, so someone who opened
X in the meantime is left out.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.db import transaction

from campaigns.models import Campaign
from campaigns.services import CampaignError, _authorize, campaign_create
from owlat.permissions import Authority

FOLLOW_UP_SOURCES = ("sent",)


@dataclass(frozen=True)
class FollowUpPreview:
    non_openers: int
    non_openers_eligible: int  # of them, those the draft could be sent to now (not suppressed, unsubscribed…)
    opens_measured: bool
    retryable_failed: int


def non_opener_filters(campaign: Campaign) -> dict[str, Any]:
    cid = str(campaign.pk)
    return {
        "logic": "AND",
        "conditions": [
            {"kind": "campaign_activity", "campaignId": cid, "field": "received", "operator": "is_true"},
            {"kind": "campaign_activity", "campaignId": cid, "field": "opened", "operator": "is_false"},
        ],
    }


def followup_preview(campaign: Campaign) -> FollowUpPreview:
    """What the follow-ups would do now: how many non-openers, whether opens were measured at all (without the
    pixel every recipient reads as a non-opener), how many failed rows a retry would re-queue."""
    from campaigns.audience import audience_eligible_count
    from delivery.lifecycle import campaign_failed_retryable
    from delivery.services import campaign_send_stats, open_rate_basis
    from owlat.conditions import filters_count

    stats = campaign_send_stats(campaign.pk)
    filters = non_opener_filters(campaign)
    audience = {"kind": "segment", "segmentId": None, "frozenFilters": filters}
    return FollowUpPreview(
        non_openers=filters_count(campaign.organization_id, filters),
        non_openers_eligible=audience_eligible_count(campaign.organization_id, audience),
        opens_measured=open_rate_basis(stats) is not None,
        retryable_failed=campaign_failed_retryable(
            organization_id=campaign.organization_id, campaign_id=campaign.pk
        ).count(),
    )


def _require_sent(campaign: Campaign, verb: str) -> None:
    if campaign.status not in FOLLOW_UP_SOURCES:
        raise CampaignError("not_sent", f"Only a sent campaign can {verb}; this one is {campaign.status}.")


def campaign_resend_to_non_openers(
    *, campaign: Campaign, actor: str, authority: Authority, name: str, subject: str | None
) -> Campaign:
    """A new draft with the campaign's template and sender, `name` and `subject`, whose audience is a new
    segment of the recipients who did not open it (filters frozen). Raises `CampaignError`."""
    from owlat.audit import audit_write
    from owlat.segments import segment_create

    _authorize(campaign.organization_id, authority, "create")
    _require_sent(campaign, "be re-sent to its non-openers")
    filters = non_opener_filters(campaign)
    with transaction.atomic():
        segment = segment_create(
            organization_id=campaign.organization_id,
            actor=actor,
            name=f"Did not open: {campaign.name}"[:200],
            description=f"Recipients of the campaign “{campaign.name}” who did not open it.",
            filters=filters,
        )
        draft = campaign_create(
            organization_id=campaign.organization_id,
            actor=actor,
            authority=authority,
            fields={
                "name": name,
                "email_template_id": campaign.email_template_id,
                "from_name": campaign.from_name,
                "from_email": campaign.from_email,
                "reply_to": campaign.reply_to,
                "subject": subject or campaign.subject,
                "audience": {"kind": "segment", "segmentId": str(segment.pk)},
            },
        )
        draft.audience = {**draft.audience, "frozenFilters": filters}
        draft.save(update_fields=["audience", "updated_at"])
        audit_write(
            organization_id=campaign.organization_id,
            actor=actor,
            action="campaign.followup_created",
            resource="campaign",
            resource_id=str(draft.pk),
            details={"source": str(campaign.pk), "kind": "non_openers", "segmentId": str(segment.pk)},
        )
    return draft


def campaign_retry_failed(*, campaign: Campaign, actor: str, authority: Authority) -> int:
    """Re-queue the rows that failed before reaching a provider with a transient error (never a row that may
    have been delivered); a second call re-queues nothing new. Returns how many rows."""
    from delivery.lifecycle import campaign_failed_requeue
    from owlat.audit import audit_write

    _authorize(campaign.organization_id, authority, "edit")
    _require_sent(campaign, "retry its failed sends")
    with transaction.atomic():
        ids = campaign_failed_requeue(organization_id=campaign.organization_id, campaign_id=campaign.pk)
        if ids:
            audit_write(
                organization_id=campaign.organization_id,
                actor=actor,
                action="campaign.failed_retried",
                resource="campaign",
                resource_id=str(campaign.pk),
                details={"rows": len(ids)},
            )
    return len(ids)
