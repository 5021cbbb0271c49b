"""DLV-11 daily organization counters and sending-reputation events (send, deliver, bounce/hard_bounce,
complaint) per organization and sender domain, kept as one `SendingStat` row per (organization, day, domain)."""

from __future__ import annotations

import datetime as dt
from typing import Any

from django.db import IntegrityError, transaction
from django.db.models import F

from owlat.models import SendingStat

STAT_FIELDS = (
    "sent",
    "failed",
    "delivered",
    "opened",
    "clicked",
    "bounced",
    "hard_bounced",
    "soft_bounced",
    "complained",
)


def sending_stats_bump(
    *, organization_id: Any, sender_domain: str, day: dt.date, deltas: dict[str, int]
) -> None:
    """Add `deltas` to the row of (organization, day, sender domain), creating it on first use."""
    deltas = {k: v for k, v in deltas.items() if v}
    unknown = set(deltas) - set(STAT_FIELDS)
    if unknown:
        raise ValueError(f"unknown sending stat(s): {', '.join(sorted(unknown))}")
    if not deltas:
        return
    key = {"organization_id": organization_id, "day": day, "sender_domain": (sender_domain or "").lower()}
    updates = {k: F(k) + v for k, v in deltas.items()}
    if SendingStat.objects.filter(**key).update(**updates):
        return
    try:
        with transaction.atomic():
            SendingStat.objects.create(**key, **deltas)
    except IntegrityError:  # created concurrently: add to it
        SendingStat.objects.filter(**key).update(**updates)
