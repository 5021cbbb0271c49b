"""The review queue (CMP-12): platform staff approve or reject campaigns the content scan held back.

Approve → `pending_review → sending` with the operator as actor, recording the fingerprint of the approved
content so the re-run orchestrator passes the scan gate for identical content. Reject (reason required) →
`draft` with "Rejected in review: <reason>". Both are idempotent: on a campaign no longer `pending_review` they
return the lifecycle's refusal and change nothing.
"""

from __future__ import annotations

from typing import Any

from django.db import transaction

from campaigns.authz import staff_refusal
from campaigns.lifecycle import DRAFT, PENDING_REVIEW, SENDING, campaign_transition_locked
from campaigns.models import Campaign, ContentScanResult
from owlat.lifecycle import Outcome
from owlat.permissions import Authority


def _refused(campaign: Campaign, to: str) -> Outcome:
    return Outcome(
        ok=False,
        reason="illegal_edge",
        message=f"Campaign is {campaign.status}, not pending review",
        from_state=campaign.status,
        to_state=to,
        object_id=campaign.pk,
    )


def review_queue() -> Any:
    """Campaigns held for review, oldest first (every organization: platform staff only)."""
    return (
        Campaign.objects.filter(status=PENDING_REVIEW).select_related("organization").order_by("updated_at")
    )


def latest_scan(campaign: Campaign) -> ContentScanResult | None:
    return ContentScanResult.objects.filter(campaign=campaign).order_by("-scanned_at").first()


def review_approve(*, campaign_id: Any, actor: str, authority: Authority) -> Outcome:
    """Platform staff only (CMP-12)."""
    from campaigns.snapshot import entries_fingerprint, snapshot_build

    refused = staff_refusal(authority)
    if refused:
        return refused
    with transaction.atomic():
        campaign = (
            Campaign.objects.select_for_update(of=("self",))
            .select_related("email_template")
            .filter(pk=campaign_id)
            .first()
        )
        if campaign is None:
            return Outcome(ok=False, reason="campaign_not_found", message="Campaign not found")
        if campaign.status != PENDING_REVIEW:
            return _refused(campaign, SENDING)
        if campaign.email_template is not None:
            fingerprint = entries_fingerprint(snapshot_build(campaign))
            Campaign.objects.filter(pk=campaign.pk).update(approved_content_fingerprint=fingerprint)
            campaign.approved_content_fingerprint = fingerprint
        return campaign_transition_locked(campaign, SENDING, actor=actor)


def review_reject(*, campaign_id: Any, actor: str, reason: str, authority: Authority) -> Outcome:
    """Platform staff only (CMP-12); a reason is required."""
    refused = staff_refusal(authority)
    if refused:
        return refused
    reason = (reason or "").strip()
    if not reason:
        return Outcome(
            ok=False, reason="reason_required", message="A reason is required to reject a campaign"
        )
    with transaction.atomic():
        campaign = Campaign.objects.select_for_update().filter(pk=campaign_id).first()
        if campaign is None:
            return Outcome(ok=False, reason="campaign_not_found", message="Campaign not found")
        if campaign.status != PENDING_REVIEW:
            return _refused(campaign, DRAFT)
        return campaign_transition_locked(
            campaign, DRAFT, actor=actor, input={"content_block_reason": f"Rejected in review: {reason}"}
        )
