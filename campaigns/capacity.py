"""CMP-21 #9 `exceeds_sending_capacity`: the warming-capacity planner.

While an install warms up its sending IPs/domains, the operator sets `CAMPAIGN_DAILY_SEND_CAPACITY` (campaign
messages per UTC day for the whole install; 0 = capacity not planned, and the check never blocks). A campaign
must fit in what is left of that capacity on the day it starts: the campaign pool does not hold a tail back
for tomorrow, so anything beyond it would go out above the warm-up cap. A campaign that does not fit is
refused with the multi-day plan it would need ("send it over N days instead"), not sent in part.

The projection is anchored at the send's start (`scheduled_at`, else now): on a later day the whole daily
capacity is free; today it is the capacity less what every organization's campaigns enqueued today
(`OrganizationSettings.daily_send_count`, counted by the walker per UTC day). The orchestrator does not re-run
this check (CMP-24): at fire time nobody is there to take the offer, and the campaign would never start.
"""

from __future__ import annotations

import datetime as dt
import math
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.db.models import Sum

#: the plan is not enumerated beyond this many days
MAX_PLAN_DAYS = 30
OPENING = (
    "This campaign is larger than your sending capacity allows in one go. At your current warm-up capacity "
)


@dataclass(frozen=True)
class CapacityPlan:
    fits: bool
    recipients: int  # eligible recipients counted (a lower bound when `under_counted`)
    first_day: int  # capacity left on the start day
    daily: int
    days: int  # days the send would take
    truncated: bool  # more than MAX_PLAN_DAYS
    under_counted: bool  # the count stopped early; `days` is a floor

    def message(self) -> str:
        if self.truncated:
            return (
                f"{OPENING}it would take more than {MAX_PLAN_DAYS} days to reach everyone — send it in stages, "
                "or reduce the audience."
            )
        word = "day" if self.days == 1 else "days"
        if self.under_counted:
            return f"{OPENING}it takes at least {self.days} {word} to reach everyone, so send it over several days instead."
        return f"{OPENING}it takes about {self.days} {word} to reach everyone, so send it over {self.days} {word} instead."


def daily_capacity() -> int:
    return max(0, int(getattr(settings, "CAMPAIGN_DAILY_SEND_CAPACITY", 0) or 0))


def day_start(moment: dt.datetime) -> dt.datetime:
    return moment.astimezone(dt.UTC).replace(hour=0, minute=0, second=0, microsecond=0)


def enqueued_today(now: dt.datetime) -> int:
    """Campaign sends every organization enqueued since midnight UTC (the walker's per-day count)."""
    from owlat.models import OrganizationSettings

    total = OrganizationSettings.objects.filter(daily_send_count_reset_at__gte=day_start(now)).aggregate(
        n=Sum("daily_send_count")
    )["n"]
    return int(total or 0)


def _count_eligible(organization_id: Any, audience: dict[str, Any], limit: int) -> tuple[int, bool]:
    """Eligible recipients (CMP-30), counted up to `limit`; `True` when the count stopped there."""
    from campaigns.audience import audience_page

    total, cursor = 0, ""
    while True:
        page = audience_page(organization_id, audience, cursor, limit=2000)
        total += len(page.eligible)
        cursor = page.next_cursor
        if page.exhausted:
            return total, False
        if total > limit:
            return total, True


def plan_for(recipients: int, *, first_day: int, daily: int, under_counted: bool = False) -> CapacityPlan:
    """Pure: the days `recipients` take at `first_day` left on the start day and `daily` after it."""
    if recipients <= first_day:
        return CapacityPlan(True, recipients, first_day, daily, 1, False, under_counted)
    days = 1 + math.ceil((recipients - first_day) / daily)
    truncated = days > MAX_PLAN_DAYS
    return CapacityPlan(
        False, recipients, first_day, daily, min(days, MAX_PLAN_DAYS), truncated, under_counted
    )


def assess_capacity(
    organization_id: Any, audience: Any, *, now: dt.datetime, starts_at: dt.datetime | None = None
) -> CapacityPlan | None:
    """`None` when capacity is not planned (or there is no audience to count): the check passes."""
    daily = daily_capacity()
    if not daily or not isinstance(audience, dict):
        return None
    start = starts_at if starts_at is not None and starts_at > now else now
    first_day = daily if day_start(start) > day_start(now) else max(0, daily - enqueued_today(now))
    limit = first_day + daily * MAX_PLAN_DAYS
    recipients, under_counted = _count_eligible(organization_id, audience, limit)
    return plan_for(recipients, first_day=first_day, daily=daily, under_counted=under_counted)
