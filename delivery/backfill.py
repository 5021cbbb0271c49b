"""`backfill_send_counters`: recompute the DLV-10 campaign counters from the send rows (their monotonic
timestamps), in primary-key batches, with progress and a summary; a dry run unless `apply`."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from django.db import transaction
from django.utils import timezone

from delivery.models import CampaignSendCounters, EmailSend

FIELDS = (
    "sent_at",
    "failed_at",
    "status",
    "delivered_at",
    "opened_at",
    "clicked_at",
    "bounced_at",
    "bounce_type",
    "unsubscribed_at",
)


@dataclass
class BackfillSummary:
    campaigns: int = 0
    rows: int = 0
    changed: int = 0
    applied: bool = False
    diffs: dict[str, dict[str, tuple[int, int]]] = field(default_factory=dict)


def _count(row: tuple, totals: dict[str, int]) -> None:
    sent_at, _failed_at, status, delivered_at, opened_at, clicked_at, bounced_at, bounce_type, unsub = row
    totals["sent"] += sent_at is not None
    totals["failed"] += status == "failed"
    totals["delivered"] += delivered_at is not None
    totals["opened"] += opened_at is not None
    totals["clicked"] += clicked_at is not None
    if bounced_at is not None:
        totals["bounced"] += 1
        totals["hard_bounced"] += bounce_type == "hard"
        totals["soft_bounced"] += bounce_type == "soft"
    totals["unsubscribed"] += unsub is not None


def recompute_campaign(
    campaign_id: Any, *, batch_size: int = 1000, progress: Callable[[int], None] | None = None
) -> tuple[dict[str, int], int]:
    """The counters of one campaign from its rows, read in keyset batches by primary key."""
    totals = dict.fromkeys(CampaignSendCounters.COUNTERS, 0)
    last: uuid.UUID | None = None
    rows = 0
    while True:
        qs = EmailSend.objects.filter(campaign_id=campaign_id).order_by("pk")
        if last is not None:
            qs = qs.filter(pk__gt=last)
        batch = list(qs.values_list("pk", *FIELDS)[:batch_size])
        if not batch:
            break
        for row in batch:
            _count(row[1:], totals)
        rows += len(batch)
        last = batch[-1][0]
        if progress:
            progress(rows)
    return totals, rows


def backfill_send_counters(
    *,
    apply: bool,
    campaign_ids: Iterable[Any] | None = None,
    batch_size: int = 1000,
    out: Callable[[str], None] = lambda s: None,
) -> BackfillSummary:
    summary = BackfillSummary(applied=apply)
    if campaign_ids is None:
        campaign_ids = (
            EmailSend.objects.order_by("campaign_id").values_list("campaign_id", flat=True).distinct()
        )
    for campaign_id in campaign_ids:
        summary.campaigns += 1
        totals, rows = recompute_campaign(
            campaign_id, batch_size=batch_size, progress=lambda n, c=campaign_id: out(f"  {c}: {n} rows read")
        )
        summary.rows += rows
        org_id = (
            EmailSend.objects.filter(campaign_id=campaign_id)
            .values_list("organization_id", flat=True)
            .first()
        )
        current_row = CampaignSendCounters.objects.filter(campaign_id=campaign_id).first()
        current = current_row.as_dict() if current_row else dict.fromkeys(CampaignSendCounters.COUNTERS, 0)
        diff = {k: (current[k], totals[k]) for k in totals if current[k] != totals[k]}
        if diff:
            summary.changed += 1
            summary.diffs[str(campaign_id)] = diff
            out(f"{campaign_id}: " + ", ".join(f"{k} {a} -> {b}" for k, (a, b) in diff.items()))
            if apply:
                with transaction.atomic():
                    CampaignSendCounters.objects.update_or_create(
                        campaign_id=campaign_id,
                        defaults={"organization_id": org_id, **totals, "updated_at": timezone.now()},
                    )
    return summary
