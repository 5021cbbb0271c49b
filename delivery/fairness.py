"""The campaign pool's fair share: organizations are served round-robin, so one organization's large campaign
does not hold another's small one behind it in the pool's first-in-first-out queue.

A campaign job is `BATCH_SIZE` rows of capacity. When other organizations have claimable campaign rows
waiting, the job takes an equal share for each organization with rows waiting (weighted by
`DELIVERY_POOL_WEIGHTS`, organization id → weight, default 1): its own organization's share from the rows it
was given, each other organization's share from that organization's oldest claimable rows (their own jobs
later find them claimed and skip them). The other organizations' rows come first (the job sends in this
order), so a small campaign waiting behind a large one is through after half a job, not a whole one. The
given rows over its share go back to the pool as a new job, so no row is left without a job. Campaigns on
hold (paused, cancelled) are not taken.
"""

from __future__ import annotations

import datetime as dt
import math
from typing import Any

from django.conf import settings
from django.db.models import Q

from delivery.lifecycle import campaigns_on_hold
from delivery.models import EmailSend, SendStatus

# How many of the other organizations' oldest claimable rows a job looks at to find who is waiting.
LOOKAHEAD = 500


def weight(organization_id: Any) -> float:
    weights = getattr(settings, "DELIVERY_POOL_WEIGHTS", None) or {}
    value = weights.get(str(organization_id), 1)
    return max(float(value), 0.01)


def fair_batch(ids: list[str], *, limit: int, now: dt.datetime) -> tuple[list[str], list[str]]:
    """(rows this job claims, given rows handed back to the pool). Alone in the pool, the job keeps its rows."""
    mine = list(EmailSend.objects.filter(pk__in=ids).values_list("organization_id", flat=True).distinct()[:2])
    if len(mine) != 1:  # no rows, or rows of several organizations (an operator re-drive): as given
        return ids, []
    own = mine[0]
    waiting = list(
        EmailSend.objects.filter(
            Q(claimed_at__isnull=True),
            Q(not_before__isnull=True) | Q(not_before__lte=now),
            status=SendStatus.QUEUED,
            handed_off_at__isnull=True,
            deleted_at__isnull=True,
            outcome_unknown=False,
            queued_at__lte=now,
        )
        .exclude(organization_id=own)
        .order_by("queued_at")
        .values_list("pk", "organization_id", "campaign_id")[:LOOKAHEAD]
    )
    held = campaigns_on_hold({str(c) for _, _, c in waiting}) if waiting else set()
    by_org: dict[Any, list[str]] = {}
    for pk, org, campaign in waiting:
        if str(campaign) not in held:
            by_org.setdefault(org, []).append(str(pk))
    if not by_org:
        return ids, []
    total = weight(own) + sum(weight(org) for org in by_org)
    taken: list[str] = []
    for org, rows in by_org.items():
        taken += rows[: math.ceil(limit * weight(org) / total)]
    own_share = max(limit - len(taken), math.ceil(limit * weight(own) / total))
    taken = taken[: limit - min(own_share, len(ids))]
    keep = max(limit - len(taken), 0)
    return taken + ids[:keep], ids[keep:]
