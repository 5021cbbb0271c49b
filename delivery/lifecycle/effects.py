"""The send lifecycle's effect handlers, one row at a time and in bulk for the batched runner: counters,
sending stats, activities, webhooks, suppression, completion and complaint handlers, attachment clean-up."""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from collections.abc import Callable
from typing import Any

from django.db import connection
from django.db.models import F
from django.db.models.functions import Greatest
from django.utils import timezone

from delivery.lifecycle.refs import (
    SOFT_BOUNCE_SUPPRESSION_THRESHOLD,
    WEBHOOK_ENDPOINTS_ATTR,
    complaint_handlers,
    completion_handlers,
)
from delivery.models import BounceType, CampaignSendCounters, SendAttachment
from owlat.sending_stats import sending_stats_bump


def _apply_counters(organization_id: str, campaign_id: str, deltas: dict[str, int]) -> None:
    deltas = {k: v for k, v in deltas.items() if v}
    if not deltas:
        return
    # a negative delta (sent -> failed) never takes a counter below 0 (the counters may have been reset since)
    updates = {k: F(k) + v if v > 0 else Greatest(F(k) + v, 0) for k, v in deltas.items()}
    updated = CampaignSendCounters.objects.filter(campaign_id=campaign_id).update(
        **updates, updated_at=timezone.now()
    )
    if not updated:
        CampaignSendCounters.objects.get_or_create(
            campaign_id=campaign_id, defaults={"organization_id": organization_id}
        )
        CampaignSendCounters.objects.filter(campaign_id=campaign_id).update(
            **updates, updated_at=timezone.now()
        )


def _run_completion(send: Any) -> None:
    for handler in completion_handlers(send.send_kind):
        handler(send)


def _has_webhook_endpoints(organization_id: Any, send: Any = None) -> bool:
    """Whether the organization has an active webhook endpoint: as read with `send` when its loader did
    (`WEBHOOK_ENDPOINTS_ATTR`), else one query."""
    known = getattr(send, WEBHOOK_ENDPOINTS_ATTR, None)
    if known is not None:
        return bool(known)
    from owlat.models import WebhookEndpoint

    return WebhookEndpoint.objects.filter(organization_id=organization_id, is_active=True).exists()


def _fx_counters(send: Any, *, deltas: dict[str, int]) -> None:
    _apply_counters(str(send.organization_id), str(send.campaign_id), deltas)


def _sender_domain(send: Any) -> str:
    """The sending domain, from the row's stable Message-ID (`<…@domain>`, set before hand-off)."""
    return (getattr(send, "message_id", None) or "").rpartition("@")[2].strip("<> ").lower()


def _fx_sending_stats(send: Any, *, deltas: dict[str, int], day: dt.date) -> None:
    sending_stats_bump(
        organization_id=send.organization_id, sender_domain=_sender_domain(send), day=day, deltas=deltas
    )


def _fx_activity(send: Any, *, activity_type: str, metadata: dict, at: dt.datetime) -> None:
    from owlat.activities import activity_record

    activity_record(
        organization_id=send.organization_id,
        contact_id=send.contact_id,
        activity_type=activity_type,
        metadata=metadata,
        at=at,
    )


def _fx_webhook(send: Any, *, event_type: str, payload: dict) -> None:
    if not _has_webhook_endpoints(send.organization_id, send):
        return
    from owlat.webhooks import webhook_emit

    webhook_emit(organization_id=send.organization_id, event_type=event_type, payload=payload)


def _fx_reset_soft_bounces(send: Any) -> None:
    from owlat.models import Contact

    if send.contact_id:
        Contact.objects.filter(pk=send.contact_id, soft_bounce_count__gt=0).update(soft_bounce_count=0)


def _source(send: Any) -> tuple[str, str]:
    return ("emailSend" if send.ref_kind == "campaign" else "transactionalSend", str(send.pk))


def _fx_suppress(send: Any, *, reason: str, bounce_type: str | None) -> None:
    from owlat.suppression import suppress

    source_type, source_id = _source(send)
    suppress(
        organization_id=send.organization_id,
        email=send.recipient,
        reason=reason,
        bounce_type=bounce_type,
        # why, for the suppression list: the bounce's reason, status code and diagnostic
        notes=(getattr(send, "error_message", None) or None) if reason == "bounced" else None,
        source_type=source_type,
        source_id=source_id,
    )


def _fx_soft_bounce(send: Any) -> None:
    """DLV-12 as refined for bounce reasons: count once per send; suppress `bounced`/`soft` once the address
    soft-bounced on `BOUNCE_SOFT_THRESHOLD` sends within `BOUNCE_SOFT_WINDOW_DAYS` — the smaller of the
    contact's counter (reset by a delivery) and the sends soft-bounced within the window (blocks excluded)."""
    from django.conf import settings

    from delivery.bounces.records import soft_bounces_in_window
    from owlat.models import Contact

    if not send.contact_id:
        return
    Contact.objects.filter(pk=send.contact_id).update(soft_bounce_count=F("soft_bounce_count") + 1)
    count = (
        Contact.objects.filter(pk=send.contact_id).values_list("soft_bounce_count", flat=True).first() or 0
    )
    threshold = getattr(settings, "BOUNCE_SOFT_THRESHOLD", SOFT_BOUNCE_SUPPRESSION_THRESHOLD)
    window_count = soft_bounces_in_window(contact_id=send.contact_id, now=send.bounced_at)
    if count >= threshold and window_count >= threshold:
        _fx_suppress(send, reason="bounced", bounce_type=BounceType.SOFT)


def _fx_complete(send: Any) -> None:
    _run_completion(send)


# Batch handlers (`transition_many`): what can be merged across the rows of one batch is applied once.


def _merged(items: list[tuple[Any, dict[str, Any]]], key: Any) -> dict[Any, dict[str, int]]:
    merged: dict[Any, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for send, kwargs in items:
        bucket = merged[key(send, kwargs)]
        for name, value in kwargs["deltas"].items():
            bucket[name] += value
    return merged


def _fx_counters_many(items: list[tuple[Any, dict[str, Any]]]) -> None:
    """Counter increments merged per campaign."""
    for (organization_id, campaign_id), deltas in _merged(
        items, lambda send, kw: (str(send.organization_id), str(send.campaign_id))
    ).items():
        _apply_counters(organization_id, campaign_id, dict(deltas))


def _fx_sending_stats_many(items: list[tuple[Any, dict[str, Any]]]) -> None:
    """Daily sending stats merged per (organization, day, sender domain)."""
    for (organization_id, day, domain), deltas in _merged(
        items, lambda send, kw: (str(send.organization_id), kw["day"], _sender_domain(send))
    ).items():
        sending_stats_bump(
            organization_id=organization_id, sender_domain=domain, day=day, deltas=dict(deltas)
        )


# Timeline rows without a contact flag may be inserted in bulk; `email_opened` / `email_clicked` go through
# `activity_record`, which also sets the contact's `has_opened` / `has_clicked` (DLV-11).
_BULK_ACTIVITY_TYPES = frozenset({"email_sent", "email_bounced", "email_complained"})


def _fx_activity_many(items: list[tuple[Any, dict[str, Any]]]) -> None:
    rows = []
    for send, kwargs in items:
        if kwargs["activity_type"] in _BULK_ACTIVITY_TYPES:
            rows.append(
                (
                    send.organization_id,
                    send.contact_id,
                    kwargs["activity_type"],
                    kwargs["metadata"],
                    kwargs["at"],
                )
            )
        else:
            _fx_activity(send, **kwargs)
    if rows:
        _insert_activities(rows)


def _insert_activities(rows: list[tuple[Any, Any, str, dict[str, Any], dt.datetime]]) -> None:
    """Timeline rows (organization, contact, type, metadata, time) in one statement. On PostgreSQL the rows go
    as one JSON document expanded by the server (`jsonb_to_recordset`): building a model instance per row and
    binding six parameters each cost more than the dispatch of a message; elsewhere `bulk_create`."""
    from owlat.models import ContactActivity

    if connection.vendor != "postgresql":
        ContactActivity.objects.bulk_create(
            [
                ContactActivity(
                    organization_id=org, contact_id=contact, activity_type=kind, metadata=meta, occurred_at=at
                )
                for org, contact, kind, meta, at in rows
            ],
            batch_size=500,
        )
        return
    from delivery.lifecycle.sql import activities_insert

    activities_insert(rows)


def _fx_webhook_many(items: list[tuple[Any, dict[str, Any]]]) -> None:
    """Webhook-endpoint existence looked up once per organization."""
    from owlat.webhooks import webhook_emit

    has_endpoints: dict[str, bool] = {}
    for send, kwargs in items:
        key = str(send.organization_id)
        if key not in has_endpoints:
            has_endpoints[key] = _has_webhook_endpoints(send.organization_id, send)
        if has_endpoints[key]:
            webhook_emit(organization_id=send.organization_id, **kwargs)


def _fx_complete_many(items: list[tuple[Any, dict[str, Any]]]) -> None:
    """Completion handlers once per campaign (or per non-campaign row), after every row of the batch is
    written."""
    seen: dict[tuple[str, str], Any] = {}
    for send, _ in items:
        seen.setdefault((send.send_kind, str(getattr(send, "campaign_id", None) or send.pk)), send)
    for send in seen.values():
        _run_completion(send)


def _fx_complained(send: Any) -> None:
    for handler in complaint_handlers(send.send_kind):
        handler(send)


def _fx_delete_attachments(send: Any) -> None:
    """DLV-11: stored attachment blobs go on the terminal worker outcome (sent or failed)."""
    if send.ref_kind == "transactional" and send.send_kind == "transactional":
        SendAttachment.objects.filter(send_id=send.pk).delete()


#: Effect name → handler of one row (the kernel runner's `effect_handlers`).
EFFECT_HANDLERS: dict[str, Callable[..., None]] = {
    "counters": _fx_counters,
    "sending_stats": _fx_sending_stats,
    "activity": _fx_activity,
    "webhook": _fx_webhook,
    "reset_soft_bounces": _fx_reset_soft_bounces,
    "suppress": _fx_suppress,
    "soft_bounce": _fx_soft_bounce,
    "complete": _fx_complete,
    "complained": _fx_complained,
    "delete_attachments": _fx_delete_attachments,
}

#: Effect name → handler of all rows of one batch (`batch_effect_handlers`, used by `send_transition_many`).
BATCH_EFFECT_HANDLERS: dict[str, Callable[[list[tuple[Any, dict[str, Any]]]], None]] = {
    "counters": _fx_counters_many,
    "sending_stats": _fx_sending_stats_many,
    "activity": _fx_activity_many,
    "webhook": _fx_webhook_many,
    "complete": _fx_complete_many,
}
