"""The campaign pool's fair share: a small campaign of one organization is not queued behind another's large one
in the pool's first-in-first-out queue.

A campaign job is `BATCH_SIZE` rows of capacity (a round). When other organizations have claimable campaign rows
waiting, the round is shared by `fair_shares`: every organization with rows waiting first gets its floor
(`DELIVERY_POOL_FLOOR` of the round, times its weight from `DELIVERY_POOL_WEIGHTS`, organization id → weight,
default 1), then the other organizations take the rest, the fewest rows waiting (per weight) first, and what
they leave is the job's own organization's. The other organizations' rows are taken from their oldest
claimable rows (their own jobs later find them claimed and skip them) and come first (the job sends in this
order), so a newcomer's small backlog goes out at the next job of any organization, nearly at the pool's full
speed, while the floor keeps every organization with rows waiting moving. The given rows over the own share
go back to the pool as a new job, so no row is left without a job. Campaigns on hold (paused, cancelled) are
not taken. A job already running applies the same rule to its rows still to go, a part at a time
(`delivery.worker.PoolJob.let_in`), so a newcomer does not wait for the jobs in flight either.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Callable, Hashable, Mapping
from typing import Any

from django.conf import settings
from django.db.models import Q

from delivery.lifecycle import campaigns_on_hold, claim_sends
from delivery.models import EmailSend, SendStatus

# How many of the other organizations' oldest claimable rows a job looks at to find who is waiting.
LOOKAHEAD = 500


def weight(organization_id: Any) -> float:
    weights = getattr(settings, "DELIVERY_POOL_WEIGHTS", None) or {}
    value = weights.get(str(organization_id), 1)
    return max(float(value), 0.01)


def pool_floor() -> float:
    """The share of a round each organization with rows waiting gets at least (0 … 1, times its weight)."""
    return min(max(float(getattr(settings, "DELIVERY_POOL_FLOOR", 0.1)), 0.0), 1.0)


def fair_shares(
    capacity: int,
    own: Hashable,
    waiting: Mapping[Hashable, int],
    *,
    floor: float,
    weight_of: Callable[[Any], float] = lambda org: 1.0,
) -> dict[Hashable, int]:
    """How many rows of a round of `capacity` each organization gets: `waiting` is each organization's rows
    waiting (`own`: the job's organization, with the job's rows). First every organization its floor
    (`ceil(floor × capacity × weight)`, the own organization first), then the others up to all their rows
    waiting, the fewest per weight first, then the own organization. Never more than an organization has
    waiting, never more than `capacity` in all. With two organizations `floor=0.5` is an equal split."""
    share = dict.fromkeys(waiting, 0)
    left = capacity

    def give(org: Hashable, rows: int) -> None:
        nonlocal left
        rows = max(0, min(rows, waiting[org] - share[org], left))
        share[org] += rows
        left -= rows

    others = sorted((org for org in waiting if org != own), key=lambda org: waiting[org] / weight_of(org))
    everyone = [own, *others] if own in waiting else others
    for org in everyone:
        give(org, math.ceil(floor * capacity * weight_of(org)))
    for org in others:
        give(org, waiting[org])
    if own in waiting:
        give(own, waiting[own])
    return share


def fair_batch(ids: list[str], *, limit: int, now: dt.datetime) -> tuple[list[str], list[str]]:
    """(rows this job claims, given rows handed back to the pool). Alone in the pool, the job keeps its rows."""
    mine = list(EmailSend.objects.filter(pk__in=ids).values_list("organization_id", flat=True).distinct()[:2])
    if len(mine) != 1:  # no rows, or rows of several organizations (an operator re-drive): as given
        return ids, []
    return share_out(ids, mine[0], waiting_rows(mine[0], now), limit=limit)


def share_out(
    ids: list[str], own: Any, by_org: dict[Any, list[str]], *, limit: int
) -> tuple[list[str], list[str]]:
    """`fair_batch` once the job's organization (`own`) and the others' waiting rows (`by_org`) are known."""
    if not by_org:
        return ids, []
    counts: dict[Hashable, int] = {org: len(rows) for org, rows in by_org.items()}
    counts[own] = len(ids)
    share = fair_shares(limit, own, counts, floor=pool_floor(), weight_of=weight)
    taken: list[str] = []
    for org in sorted(by_org, key=lambda org: counts[org] / weight(org)):  # the smallest backlog first
        taken += by_org[org][: share[org]]
    keep = share[own]
    return taken + ids[:keep], ids[keep:]


def waiting_rows(own: Any, now: dt.datetime) -> dict[Any, list[str]]:
    """The other organizations' oldest claimable campaign rows (`LOOKAHEAD` at most, campaigns on hold left
    out), by organization. The organization is asked as two ranges around `own` (not `!= own`), so the partial
    index of queued rows by organization finds them without reading the job's own organization's rows: a job
    alone in the pool pays almost nothing for the look."""
    waiting = list(
        EmailSend.objects.filter(
            Q(organization_id__lt=own) | Q(organization_id__gt=own),
            Q(not_before__isnull=True) | Q(not_before__lte=now),
            status=SendStatus.QUEUED,
            claimed_at__isnull=True,
            handed_off_at__isnull=True,
            deleted_at__isnull=True,
            outcome_unknown=False,
            queued_at__lte=now,
        )
        .order_by("queued_at")
        .values_list("pk", "organization_id", "campaign_id")[:LOOKAHEAD]
    )
    held = campaigns_on_hold({str(c) for _, _, c in waiting}) if waiting else set()
    by_org: dict[Any, list[str]] = {}
    for pk, org, campaign in waiting:
        if str(campaign) not in held:
            by_org.setdefault(org, []).append(str(pk))
    return by_org


# What a running job lets in at a time: small parts, so every running job takes its part of a newcomer's rows
# (over all their connections) instead of the first one to look taking them all.
LET_IN_ROWS = 25


def let_in(job: Any, rows: list[Any], index: int) -> bool:
    """The fair pool while a campaign job (`delivery.worker.PoolJob`) runs: other organizations' rows waiting
    (a campaign handed to the pool after the job started) get their share of the job's next `LET_IN_ROWS` rows
    (`share_out`, as `fair_batch`); they are claimed and sent now, and as many of the own rows still to go (`rows[index:]`) go
    back to the pool as a new job (cut from `rows`). The job looks again as soon as the own rows of that share
    (the floor) went out, so every running job takes the newcomer's rows a part at a time, side by side, until
    none wait. False when the job ran out of time sending them."""
    own_org = rows[index].organization_id
    if any(r.organization_id != own_org for r in rows[index:]):  # rows of several organizations: as given
        return True
    by_org = waiting_rows(own_org, job.now())  # one cheap statement while nobody else waits
    if not by_org:
        return True
    rest = [str(r.pk) for r in rows[index:]]
    taken, _back = share_out(rest, own_org, by_org, limit=min(len(rest), LET_IN_ROWS))
    own = set(rest)
    others = [pk for pk in taken if pk not in own]
    if not others:
        return True
    job.token, won = claim_sends(job.kind, others, token=job.token, now=job.now())
    wanted = set(others)
    won = [pk for pk in won if pk in wanted]  # (on SQLite the claim lists every row under the token)
    if not won:
        return True
    cut = index + max(len(rest) - len(won), 0)
    job.hand_back(rows[cut:])
    del rows[cut:]
    job.summary.claimed += len(won)
    if not job.send_round(job.load(won), nested=True):
        return False
    # look again once the own rows of this share went out: the newcomer may have more rows waiting
    job.fair_again_at = index + max(len(taken) - len(others), 1)
    return True
