"""Campaign send rows (DLV-01, DLV-03) and the campaign engine's reads: counters (DLV-10) and ever-reached
stats (DLV-09, CMP-20)."""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from django.db import transaction
from django.db.models import Count, Q
from django.utils import timezone

from delivery.models import (
    CampaignSendCounters,
    CampaignSendSettings,
    EmailSend,
    SendStatus,
)
from delivery.services.pools import ROW_SCAN_CAP, sends_enqueue


@dataclass(frozen=True)
class CampaignSendContext:
    """Campaign-level composition data, given by the campaign engine with every batch."""

    from_email: str
    from_name: str = ""
    reply_to: str = ""
    topic_id: str | None = None
    topic_name: str = ""
    view_in_browser_url: str = ""
    track: bool = True


@dataclass(frozen=True)
class CampaignRecipient:
    contact_id: str
    email: str
    first_name: str | None = None
    last_name: str | None = None
    email_template_id: str | None = None
    personalized_subject: str | None = None
    language: str | None = None
    ab_variant: str | None = None


def campaign_send_settings_set(
    *, organization_id: Any, campaign_id: Any, context: CampaignSendContext
) -> None:
    CampaignSendSettings.objects.update_or_create(
        campaign_id=campaign_id,
        defaults={
            "organization_id": organization_id,
            "from_email": context.from_email,
            "from_name": context.from_name or "",
            "reply_to": context.reply_to or "",
            "topic_id": context.topic_id or None,
            "topic_name": context.topic_name or "",
            "view_in_browser_url": context.view_in_browser_url or "",
            "track": context.track,
        },
    )
    CampaignSendCounters.objects.get_or_create(
        campaign_id=campaign_id, defaults={"organization_id": organization_id}
    )


def create_batch(
    *,
    organization_id: Any,
    campaign_id: Any,
    context: CampaignSendContext,
    sends: Iterable[CampaignRecipient],
    enqueue: bool = True,
    at: Any = None,
) -> dict[str, str]:
    """DLV-03: insert a row only for contacts without a row for this campaign; return `{contact_id: send_id}`
    for exactly the rows inserted, and (unless `enqueue=False`) enqueue only those on the campaign pool.
    Idempotent: a page processed twice inserts and enqueues nothing the second time."""
    sends = list(sends)
    with transaction.atomic():
        campaign_send_settings_set(organization_id=organization_id, campaign_id=campaign_id, context=context)
        if not sends:
            return {}
        contact_ids = [uuid.UUID(str(s.contact_id)) for s in sends]
        existing = set(
            EmailSend.objects.filter(campaign_id=campaign_id, contact_id__in=contact_ids).values_list(
                "contact_id", flat=True
            )
        )
        now = timezone.now()
        rows: list[EmailSend] = []
        seen: set[uuid.UUID] = set()
        for s in sends:
            cid = uuid.UUID(str(s.contact_id))
            if cid in existing or cid in seen:
                continue
            seen.add(cid)
            rows.append(
                EmailSend(
                    id=uuid.uuid4(),
                    organization_id=organization_id,
                    campaign_id=campaign_id,
                    contact_id=cid,
                    contact_email=s.email,
                    contact_first_name=s.first_name,
                    contact_last_name=s.last_name,
                    personalized_subject=s.personalized_subject,
                    language=s.language,
                    ab_variant=s.ab_variant,
                    email_template_id=s.email_template_id,
                    queued_at=now,
                )
            )
        # ignore_conflicts: a concurrent page inserting the same (campaign, contact) loses quietly; we then
        # re-read which of our ids exist so the result lists exactly the rows this call inserted.
        EmailSend.objects.bulk_create(rows, batch_size=1000, ignore_conflicts=True)
        ids = [r.id for r in rows]
        inserted = set(EmailSend.objects.filter(id__in=ids).values_list("id", flat=True)) if rows else set()
        result = {str(r.contact_id): str(r.id) for r in rows if r.id in inserted}
        if enqueue and result:
            sends_enqueue("campaign", list(result.values()), at=at)
        return result


def campaign_counters(campaign_id: Any) -> dict[str, Any]:
    """DLV-10 counters of a campaign (zeros when it has none yet) and their freshness."""
    row = CampaignSendCounters.objects.filter(campaign_id=campaign_id).first()
    if row is None:
        return {**dict.fromkeys(CampaignSendCounters.COUNTERS, 0), "updated_at": None}
    return {**row.as_dict(), "updated_at": row.updated_at}


def campaign_counters_reset(*, organization_id: Any, campaign_id: Any) -> None:
    """CMP-08: all counters back to 0 when the campaign goes → `sending`."""
    CampaignSendCounters.objects.update_or_create(
        campaign_id=campaign_id,
        defaults={
            "organization_id": organization_id,
            **dict.fromkeys(CampaignSendCounters.COUNTERS, 0),
            "updated_at": timezone.now(),
        },
    )


def campaign_send_stats(campaign_id: Any, *, ab_variant: str | None = None) -> dict[str, int]:
    """DLV-09 "ever reached" buckets from the rows' monotonic timestamps (never the current status); above
    `ROW_SCAN_CAP` rows (or for the whole campaign when the cap is hit) the denormalized counters are used."""
    qs = EmailSend.objects.filter(campaign_id=campaign_id, deleted_at__isnull=True)
    if ab_variant:
        qs = qs.filter(ab_variant=ab_variant)
    total = qs.count()
    if total > ROW_SCAN_CAP and not ab_variant:
        counters = campaign_counters(campaign_id)
        return {k: counters[k] for k in CampaignSendCounters.COUNTERS} | {
            "total": total,
            "queued": qs.filter(status=SendStatus.QUEUED).count(),
            "outcome_unknown": qs.filter(status=SendStatus.QUEUED, outcome_unknown=True).count(),
            "source": "counters",  # type: ignore[dict-item]
        }
    agg = qs.aggregate(
        sent=Count("pk", filter=Q(sent_at__isnull=False)),
        failed=Count("pk", filter=Q(status=SendStatus.FAILED)),
        delivered=Count(
            "pk",
            filter=Q(delivered_at__isnull=False) | Q(opened_at__isnull=False) | Q(clicked_at__isnull=False),
        ),
        opened=Count("pk", filter=Q(opened_at__isnull=False)),
        clicked=Count("pk", filter=Q(clicked_at__isnull=False) | ~Q(clicked_links=[])),
        bounced=Count("pk", filter=Q(bounced_at__isnull=False)),
        hard_bounced=Count("pk", filter=Q(bounced_at__isnull=False, bounce_type="hard")),
        soft_bounced=Count("pk", filter=Q(bounced_at__isnull=False, bounce_type="soft")),
        complained=Count("pk", filter=Q(complained_at__isnull=False)),
        unsubscribed=Count("pk", filter=Q(unsubscribed_at__isnull=False)),
        queued=Count("pk", filter=Q(status=SendStatus.QUEUED)),
        outcome_unknown=Count("pk", filter=Q(status=SendStatus.QUEUED, outcome_unknown=True)),
    )
    return {**agg, "total": total}


def campaign_has_queued_sends(campaign_id: Any, *, count_unknown_as_finished: bool = True) -> bool:
    """CMP-13 helper: is any row still waiting? D-07: an outcome-unknown row counts as finished."""
    qs = EmailSend.objects.filter(campaign_id=campaign_id, status=SendStatus.QUEUED, deleted_at__isnull=True)
    if count_unknown_as_finished:
        qs = qs.filter(outcome_unknown=False)
    return qs.exists()


def campaign_has_sends(campaign_id: Any) -> bool:
    return EmailSend.objects.filter(campaign_id=campaign_id).exists()
