"""DLV-11 daily organization counters and sending-reputation events (send, deliver, bounce/hard_bounce,
complaint) per organization and sender domain, kept as one `SendingStat` row per (organization, day, domain)."""

from __future__ import annotations

import datetime as dt
import uuid
from typing import Any

from django.db import IntegrityError, connection, transaction
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
    if connection.vendor == "postgresql":
        _upsert(organization_id, day, (sender_domain or "").lower(), deltas)
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


def _upsert(organization_id: Any, day: dt.date, sender_domain: str, deltas: dict[str, int]) -> None:
    """PostgreSQL: the row created with `deltas` or `deltas` added to it, in one prepared statement (`INSERT …
    ON CONFLICT (organization, day, sender domain) DO UPDATE`; every delivery job writes it: was an UPDATE, and
    on a day's first use a savepoint and an INSERT). As before: `updated_at` is set when the row is created
    (the ORM's `update()` never set it), the other counters gain 0."""
    from django.utils import timezone
    from psycopg.types.numeric import Int4

    from owlat.sql import sending_stat_add

    sending_stat_add(
        [
            uuid.uuid4(),
            str(organization_id),
            day,
            sender_domain,
            *(Int4(deltas.get(name, 0)) for name in STAT_FIELDS),
            timezone.now(),
        ]
    )
