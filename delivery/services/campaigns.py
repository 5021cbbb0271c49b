"""Campaign send rows (DLV-01, DLV-03) and the campaign engine's reads: counters (DLV-10) and ever-reached
stats (DLV-09, CMP-20)."""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from django.db import connection, transaction
from django.db.models import Count, Q
from django.utils import timezone

from delivery.models import (
    CampaignSendCounters,
    CampaignSendSettings,
    EmailSend,
    SendStatus,
)
from delivery.services.pools import ROW_SCAN_CAP, sends_enqueue
from delivery.sql import campaign_sends_insert


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
    #: CMP-34: no job, sweep or retry hands the row out before this instant (None: at once)
    not_before: Any = None


def campaign_send_settings_set(
    *, organization_id: Any, campaign_id: Any, context: CampaignSendContext
) -> None:
    """The campaign-level composition data and the counters row: one upsert each (called for every page)."""
    CampaignSendSettings.objects.bulk_create(
        [
            CampaignSendSettings(
                campaign_id=campaign_id,
                organization_id=organization_id,
                from_email=context.from_email,
                from_name=context.from_name or "",
                reply_to=context.reply_to or "",
                topic_id=context.topic_id or None,
                topic_name=context.topic_name or "",
                view_in_browser_url=context.view_in_browser_url or "",
                track=context.track,
            )
        ],
        update_conflicts=True,
        unique_fields=["campaign_id"],
        update_fields=[
            "organization_id",
            "from_email",
            "from_name",
            "reply_to",
            "topic_id",
            "topic_name",
            "view_in_browser_url",
            "track",
        ],
    )
    CampaignSendCounters.objects.bulk_create(
        [CampaignSendCounters(campaign_id=campaign_id, organization_id=organization_id)],
        ignore_conflicts=True,
    )


def create_batch(
    *,
    organization_id: Any,
    campaign_id: Any,
    context: CampaignSendContext,
    sends: Iterable[CampaignRecipient],
    enqueue: bool = True,
    at: Any = None,
    write_settings: bool = True,
) -> dict[str, str]:
    """DLV-03: insert a row only for contacts without a row for this campaign; return `{contact_id: send_id}`
    for exactly the rows inserted, and (unless `enqueue=False`) enqueue only those on the campaign pool.
    Idempotent: a page processed twice inserts and enqueues nothing the second time.

    On PostgreSQL one set-based statement per call (`INSERT … SELECT FROM json_array_elements(…) ON CONFLICT (campaign_id,
    contact_id) DO NOTHING RETURNING`): the unique constraint decides, so a concurrent page inserting the same
    (campaign, contact) loses quietly and the result lists exactly the rows this call inserted. Elsewhere
    (SQLite) `bulk_create(ignore_conflicts=True)` and a re-read. The caller pages the audience (CMP-29), so a call
    holds one page, never the audience. `write_settings=False` skips the campaign-level upserts (settings and
    counters rows) when the caller already wrote them in this walk (the campaign walker, once per hop)."""
    now = timezone.now()
    rows: list[tuple[Any, ...]] = []
    seen: set[str] = set()
    for s in sends:
        # ids travel as text (PostgreSQL casts them; the plain path parses them): no UUID object per row
        cid = str(s.contact_id)
        if cid in seen:
            continue
        seen.add(cid)
        rows.append(
            (
                cid,
                s.email,
                s.first_name,
                s.last_name,
                s.personalized_subject,
                s.language,
                s.ab_variant,
                s.not_before.isoformat() if s.not_before else None,
                str(s.email_template_id) if s.email_template_id else None,
            )
        )
    with transaction.atomic(savepoint=False):
        if write_settings:
            campaign_send_settings_set(
                organization_id=organization_id, campaign_id=campaign_id, context=context
            )
        if not rows:
            return {}
        if connection.vendor == "postgresql":
            result = campaign_sends_insert(
                organization_id, uuid.UUID(str(campaign_id)), rows, now, _ROW_FIELDS
            )
        else:
            result = _insert_rows_orm(organization_id, uuid.UUID(str(campaign_id)), rows, now)
        if enqueue and result:
            sends_enqueue("campaign", list(result.values()), at=at)
        return result


#: the per-recipient columns of a campaign send row, in the order of the tuples `create_batch` builds
_ROW_FIELDS = (
    "contact_id",
    "contact_email",
    "contact_first_name",
    "contact_last_name",
    "personalized_subject",
    "language",
    "ab_variant",
    "not_before",
    "email_template_id",
)


def _as_uuid(value: Any) -> uuid.UUID:
    return value if isinstance(value, uuid.UUID) else uuid.UUID(str(value))


def _insert_rows_orm(
    organization_id: Any, campaign_id: uuid.UUID, rows: list[tuple[Any, ...]], now: Any
) -> dict[str, str]:
    """The plain path (SQLite): skip contacts that already have a row, `bulk_create(ignore_conflicts=True)`
    (a concurrent page inserting the same pair loses quietly), then re-read which of our ids exist."""
    rows = [(_as_uuid(row[0]), *row[1:-1], _as_uuid(row[-1]) if row[-1] else None) for row in rows]
    existing = set(
        EmailSend.objects.filter(campaign_id=campaign_id, contact_id__in=[r[0] for r in rows]).values_list(
            "contact_id", flat=True
        )
    )
    objs = [
        EmailSend(
            organization_id=organization_id,
            campaign_id=campaign_id,
            queued_at=now,
            **dict(zip(_ROW_FIELDS, row, strict=True)),
        )
        for row in rows
        if row[0] not in existing
    ]
    EmailSend.objects.bulk_create(objs, batch_size=500, ignore_conflicts=True)
    ids = [o.id for o in objs]
    inserted = set(EmailSend.objects.filter(id__in=ids).values_list("id", flat=True)) if objs else set()
    return {str(o.contact_id): str(o.id) for o in objs if o.id in inserted}


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


def _bucket_expressions() -> dict[str, Count]:
    reached = Q(delivered_at__isnull=False) | Q(opened_at__isnull=False) | Q(clicked_at__isnull=False)
    return {
        # a row reported failed after it was sent counts in `failed` only
        "sent": Count("pk", filter=Q(sent_at__isnull=False) & ~Q(status=SendStatus.FAILED)),
        "failed": Count("pk", filter=Q(status=SendStatus.FAILED)),
        "delivered": Count("pk", filter=reached),
        "opened": Count("pk", filter=Q(opened_at__isnull=False)),
        # rows whose message carried the open pixel: the only ones whose opens are measured
        "pixel_rows": Count("pk", filter=Q(open_tracked=True)),
        "pixel_opened": Count("pk", filter=Q(open_tracked=True, opened_at__isnull=False)),
        "pixel_known": Count("pk", filter=Q(open_tracked__isnull=False)),
        "clicked": Count("pk", filter=Q(clicked_at__isnull=False) | ~Q(clicked_links=[])),
        "bounced": Count("pk", filter=Q(bounced_at__isnull=False)),
        "hard_bounced": Count("pk", filter=Q(bounced_at__isnull=False, bounce_type="hard")),
        "soft_bounced": Count("pk", filter=Q(bounced_at__isnull=False, bounce_type="soft")),
        "complained": Count("pk", filter=Q(complained_at__isnull=False)),
        "unsubscribed": Count("pk", filter=Q(unsubscribed_at__isnull=False)),
        "queued": Count("pk", filter=Q(status=SendStatus.QUEUED)),
        "cancelled": Count("pk", filter=Q(status=SendStatus.CANCELLED)),
        "outcome_unknown": Count("pk", filter=Q(status=SendStatus.QUEUED, outcome_unknown=True)),
        "rows": Count("pk"),
    }


def send_buckets(rows: Any) -> dict[str, int]:
    """The one definition of a campaign's result buckets (DLV-09 "ever reached", CMP-20): counted in one query
    over the send rows `rows` (a queryset) from their monotonic timestamps, never the current status. `rows` is
    the number of rows; `delivered` counts a row with `delivered_at`, `opened_at` or `clicked_at`; `clicked`
    one with `clicked_at` or recorded links. Used by the stats below, the campaign engine's stats backfill and
    its per-variant A/B results."""
    return {k: int(v or 0) for k, v in rows.aggregate(**_bucket_expressions()).items()}


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
            "cancelled": qs.filter(status=SendStatus.CANCELLED).count(),
            "pixel_rows": qs.filter(open_tracked=True).count(),
            "pixel_opened": qs.filter(open_tracked=True, opened_at__isnull=False).count(),
            "pixel_known": qs.filter(open_tracked__isnull=False).count(),
            "source": "counters",  # type: ignore[dict-item]
        }
    buckets = send_buckets(qs)
    del buckets["rows"]  # `total` above
    return {**buckets, "total": total}


def campaign_has_queued_sends(campaign_id: Any, *, count_unknown_as_finished: bool = True) -> bool:
    """CMP-13 helper: is any row still waiting? D-07: an outcome-unknown row counts as finished."""
    qs = EmailSend.objects.filter(campaign_id=campaign_id, status=SendStatus.QUEUED, deleted_at__isnull=True)
    if count_unknown_as_finished:
        qs = qs.filter(outcome_unknown=False)
    return qs.exists()


def campaign_has_sends(campaign_id: Any) -> bool:
    return EmailSend.objects.filter(campaign_id=campaign_id).exists()


def campaign_sends_requeue(campaign_id: Any, *, chunk_size: int = 50, now: Any = None) -> int:
    """A resumed campaign: hand its rows still waiting (queued, unclaimed, never handed off) to the pool again,
    in chunks, each at its not-before instant (CMP-34) when that is still ahead. A row whose old job is still
    in the queue is claimed by whichever job comes first (claims are compare-and-set). Returns how many rows."""
    now = now or timezone.now()
    rows = EmailSend.objects.filter(
        campaign_id=campaign_id,
        status=SendStatus.QUEUED,
        handed_off_at__isnull=True,
        claimed_at__isnull=True,
        deleted_at__isnull=True,
    ).order_by("not_before", "pk")
    by_instant: dict[Any, list[str]] = {}
    for pk, not_before in rows.values_list("pk", "not_before").iterator(chunk_size=2000):
        at = not_before if not_before and not_before > now else None
        by_instant.setdefault(at, []).append(str(pk))
    for at, ids in by_instant.items():
        sends_enqueue("campaign", ids, at=at, chunk_size=chunk_size)
    return sum(len(ids) for ids in by_instant.values())


def campaign_sends_cancel(campaign_id: Any) -> int:
    """A cancelled campaign: its rows that never reached the wire end `cancelled` (the send lifecycle's bulk
    compare-and-set). Returns how many."""
    from delivery.lifecycle import cancel_campaign_queued

    return cancel_campaign_queued(campaign_id)


def open_rate_basis(stats: dict[str, Any]) -> tuple[int, int, str] | None:
    """The open rate's (opened, denominator, what the denominator is) for `campaign_send_stats` figures, or None
    when opens are not measured: only rows whose message carried the open pixel can report an open, so the
    rate is over those. Over delivered rows instead when the rows predate the per-row record (`open_tracked`
    NULL on every row) or when opens were reported on rows without our pixel (a provider that tracks opens
    itself, through its webhooks)."""
    if stats.get("pixel_known", 0) == 0:
        return stats["opened"], stats["delivered"], "delivered"
    if stats["opened"] > stats.get("pixel_opened", 0):
        return stats["opened"], stats["delivered"], "delivered (opens reported by the provider)"
    if stats.get("pixel_rows", 0) == 0:
        return None
    return stats["pixel_opened"], stats["pixel_rows"], "sent with an open pixel"
