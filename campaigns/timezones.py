"""Recipient time zones (CMP-34), pure: the zone a recipient's mail is timed in, and the next instant at a local
wall time."""

from __future__ import annotations

import datetime as dt
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError


def zone_for(name: str | None, org_default: str | None) -> ZoneInfo:
    """Recipient zone; invalid/missing → the organization's default if valid → UTC."""
    for candidate in (name, org_default):
        if candidate:
            try:
                return ZoneInfo(candidate)
            except (ZoneInfoNotFoundError, ValueError):
                continue
    return ZoneInfo("UTC")


def next_local_instant(zone: ZoneInfo, hour: int, minute: int, now: dt.datetime) -> dt.datetime:
    """The next instant strictly after `now` at which the wall clock in `zone` shows HH:MM (DST-correct:
    computed per local date, not from an offset). A wall time skipped by a spring-forward gap is taken at
    the pre-transition offset (zoneinfo's fold=0), i.e. just after the gap."""
    local_now = now.astimezone(zone)
    for days in range(0, 3):
        day = local_now.date() + dt.timedelta(days=days)
        candidate = dt.datetime(day.year, day.month, day.day, hour, minute, tzinfo=zone)
        instant = candidate.astimezone(dt.UTC)
        if instant > now:
            return instant
    raise AssertionError("unreachable: a wall time recurs within 3 days")  # pragma: no cover
