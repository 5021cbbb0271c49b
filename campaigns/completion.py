"""Completion (CMP-13), the crons (CMP-14, CMP-36), the counter roll-up (DLV-10) and delivery's complaint hook
(DLV-11)."""

from __future__ import annotations

import datetime as dt
import logging
from typing import Any

from django.db import transaction
from django.utils import timezone

from campaigns.ab_lifecycle import WINNER_SELECTED
from campaigns.lifecycle import ACTOR_COMPLETION, SCHEDULED, SENDING, SENT, campaign_transition_locked
from campaigns.models import (
    STATS_FIELDS,
    Campaign,
    CampaignSendJob,
    ContentScanResult,
    SendJobPhase,
    VariantMode,
)

logger = logging.getLogger(__name__)


def _completable(campaign: Campaign) -> bool:
    from delivery.services import campaign_has_queued_sends, campaign_has_sends

    if campaign.status != SENDING:
        return False
    if campaign.is_ab_test and campaign.ab_test_status != WINNER_SELECTED:
        return False
    job = CampaignSendJob.objects.filter(campaign_id=campaign.pk).values("phase", "variant_mode").first()
    if job is not None and job["phase"] == SendJobPhase.RESOLVING:
        return False
    if campaign.is_ab_test and (job is None or job["variant_mode"] != VariantMode.AB_WINNER):
        return False  # the winner is chosen but its remainder walk has not started yet
    return campaign_has_sends(campaign.pk) and not campaign_has_queued_sends(campaign.pk)


def try_complete_campaign(campaign_or_send: Any) -> bool:
    """CMP-13: `sending → sent` (actor `system:send_completion`) when every condition holds; a cheap no-op
    otherwise. Accepts a campaign id, a `Campaign`, or a send row (delivery's completion registry, DLV-18).

    The check runs again under the campaign's row lock: two workers finishing the last rows concurrently are
    serialized by it, so the later one sees the earlier one's committed rows and completes the campaign."""
    campaign_id = getattr(campaign_or_send, "campaign_id", None) or getattr(campaign_or_send, "pk", None)
    if campaign_id is None:
        campaign_id = campaign_or_send
    status = Campaign.objects.filter(pk=campaign_id).values_list("status", flat=True).first()
    if status != SENDING:
        return False
    with transaction.atomic():
        campaign = Campaign.objects.select_for_update().filter(pk=campaign_id).first()
        if campaign is None or not _completable(campaign):
            return False
        stats_rollup(campaign)
        outcome = campaign_transition_locked(campaign, SENT, actor=ACTOR_COMPLETION)
        return outcome.ok and outcome.applied == "transitioned"


def stats_rollup(campaign: Campaign, *, now: dt.datetime | None = None) -> dict[str, int]:
    """DLV-10: copy delivery's counters into the campaign's `stats_*` fields (not a status write)."""
    from delivery.services import campaign_counters

    counters = campaign_counters(campaign.pk)
    values = {f"stats_{name}": int(counters.get(name, 0)) for name in (f[6:] for f in STATS_FIELDS)}
    values["stats_updated_at"] = now or timezone.now()
    Campaign.objects.filter(pk=campaign.pk).update(**values)
    for key, value in values.items():
        setattr(campaign, key, value)
    return values


def reconcile_sending_campaigns(*, limit: int = 500) -> dict[str, int]:
    """CMP-14 every minute: roll up the counters of every `sending` campaign and try to complete it."""
    ids = list(
        Campaign.objects.filter(status=SENDING).order_by("updated_at").values_list("pk", flat=True)[:limit]
    )
    completed = 0
    for pk in ids:
        campaign = Campaign.objects.filter(pk=pk).first()
        if campaign is None:
            continue
        stats_rollup(campaign)
        if try_complete_campaign(pk):
            completed += 1
    return {"reconciled": len(ids), "completed": completed}


def refresh_sent_stats(*, limit: int = 500) -> int:
    """DLV-10 [orig] 2-minute job: copy a `sent` campaign's counters into its `stats_*` fields whenever they
    moved since the last copy (opens, clicks, bounces and unsubscribes keep arriving long after the send, so
    there is no age limit); a campaign whose counters did not move is not touched, so the job's cost follows
    the activity, not the number of campaigns ever sent."""
    from django.db.models import F, OuterRef, Q, Subquery

    from delivery.models import CampaignSendCounters

    moved = CampaignSendCounters.objects.filter(campaign_id=OuterRef("pk")).values("updated_at")[:1]
    ids = list(
        Campaign.objects.filter(status=SENT)
        .annotate(counters_at=Subquery(moved))
        .filter(Q(stats_updated_at__isnull=True) | Q(counters_at__gt=F("stats_updated_at")))
        .order_by("stats_updated_at")
        .values_list("pk", flat=True)[:limit]
    )
    for pk in ids:
        stats_rollup(Campaign(pk=pk))
    return len(ids)


def process_scheduled_campaigns(*, now: dt.datetime | None = None, limit: int = 500) -> int:
    """CMP-14 every minute: run the orchestrator for each due `scheduled` campaign (the orchestrator's guards
    make a campaign already handled by its own due task a no-op)."""
    from campaigns.orchestrator import start_campaign_send

    now = now or timezone.now()
    ids = list(
        Campaign.objects.filter(status=SCHEDULED, scheduled_at__lte=now)
        .order_by("scheduled_at")
        .values_list("pk", flat=True)[:limit]
    )
    for pk in ids:
        try:
            start_campaign_send(pk, now=now)
        except Exception:
            logger.exception("scheduled campaign %s could not be started", pk)
    return len(ids)


COMPLAINT_FLAG = {
    "rule": "suspicious_pattern",
    "severity": "low",
    "description": "Spam complaint received (feedback loop)",
}


def on_campaign_complaint(send: Any) -> None:
    """DLV-11: append a low `suspicious_pattern` flag to the campaign's latest stored scan result, if any."""
    result = (
        ContentScanResult.objects.select_for_update()
        .filter(campaign_id=send.campaign_id)
        .order_by("-scanned_at")
        .first()
    )
    if result is None:
        return
    result.flags = [*(result.flags or []), dict(COMPLAINT_FLAG)]
    result.save(update_fields=["flags"])
