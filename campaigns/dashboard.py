"""The campaigns' part of the admin dashboard's "Needs attention" (owlat.admin.dashboard registry, filled in
`ready()`): campaigns held for review (CMP-12) and send jobs the CMP-36 watchdog would call stuck.

Members see their organization's held campaigns, linked to the campaign; platform staff (organization None)
see every organization's, linked to the review queue where they approve or reject. Bounded queries on indexed
filters: a count plus at most `SHOWN` rows each."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from django.urls import reverse

from campaigns.models import Campaign, CampaignStatus
from campaigns.walker import STUCK_AFTER, stuck_send_jobs
from owlat.admin.dashboard import AttentionItem

SHOWN = 5


def _held_link(organization_id: Any, pk: Any) -> str:
    if organization_id is None:  # platform staff decide in the review queue
        return reverse("admin:campaigns_campaignreview_change", args=[pk])
    return reverse("admin:campaigns_campaign_change", args=[pk])


def held_for_review(organization_id: Any) -> Iterator[AttentionItem]:
    qs = Campaign.objects.filter(status=CampaignStatus.PENDING_REVIEW)
    if organization_id is not None:
        qs = qs.filter(organization_id=organization_id)
    held = list(qs.order_by("-updated_at").values_list("pk", "name")[: SHOWN + 1])
    detail = (
        "The content scan flagged it; platform staff approve or reject it in the review queue."
        if organization_id is None
        else "The content scan flagged it; it is held for review and sends once approved."
    )
    for pk, name in held[:SHOWN]:
        yield AttentionItem(
            f"Campaign “{name}” is held for review",
            link=_held_link(organization_id, pk),
            severity="warning",
            detail=detail,
        )
    if len(held) > SHOWN:
        more = qs.count() - SHOWN
        link = (
            reverse("admin:campaigns_campaignreview_changelist")
            if organization_id is None
            else reverse("admin:campaigns_campaign_changelist") + "?status__exact=pending_review"
        )
        yield AttentionItem(f"{more} more campaign(s) held for review", link=link, severity="warning")


def stuck_sends(organization_id: Any) -> Iterator[AttentionItem]:
    stuck = list(
        stuck_send_jobs(organization_id=organization_id)
        .order_by("updated_at")
        .values_list("campaign_id", "campaign__name")[: SHOWN + 1]
    )
    minutes = int(STUCK_AFTER.total_seconds() // 60)
    for campaign_id, name in stuck[:SHOWN]:
        yield AttentionItem(
            f"Sending of campaign “{name}” looks stuck",
            link=reverse("admin:campaigns_campaign_change", args=[campaign_id]),
            severity="danger",
            detail=f"Resolving its audience made no progress for over {minutes} minutes; "
            "the watchdog re-drives it every 5 minutes — check the workers if this stays.",
        )
    if len(stuck) > SHOWN:
        yield AttentionItem(
            "More campaign sends look stuck",
            link=reverse("admin:campaigns_campaign_changelist") + "?status__exact=sending",
            severity="danger",
        )
