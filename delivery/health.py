"""Provider health (DLV-17): success and latency per provider, recorded cheaply.

`provider_health_record` is called by the dispatch helper after the final attempt of every message; it only adds
to an in-process tally (per provider and minute, under a lock). `provider_health_flush` writes the tally — one
increment per (provider, minute), so one or two rows per worker job instead of a hot row per send — and is called
at the end of every worker job (the dispatch helper's only caller), so a tally lives at most one job. On PostgreSQL
the increment is one `INSERT … ON CONFLICT DO UPDATE` per (provider, minute) with its SQL built once: the ORM's
`update()` with seven expressions cost a tenth of a small transactional job's CPU.
`provider_health_summary` is what the admin shows.
"""

from __future__ import annotations

import datetime as dt
import threading
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from django.db import IntegrityError, transaction
from django.db.models import F, Max, Sum
from django.db.models.functions import Greatest
from django.utils import timezone


@dataclass
class _Tally:
    dispatches: int = 0
    succeeded: int = 0
    failed: int = 0
    unknown: int = 0
    attempts: int = 0
    latency_total_ms: int = 0
    latency_max_ms: int = 0
    last_error_code: str = ""


@dataclass
class _State:
    lock: threading.Lock = field(default_factory=threading.Lock)
    tallies: dict[tuple[str, dt.datetime], _Tally] = field(default_factory=lambda: defaultdict(_Tally))


_state = _State()


def _minute(at: dt.datetime) -> dt.datetime:
    return at.replace(second=0, microsecond=0)


def provider_health_record(
    *,
    provider: str,
    ok: bool,
    latency_ms: int,
    attempts: int,
    error_code: str | None = None,
    outcome_unknown: bool = False,
    at: dt.datetime | None = None,
) -> None:
    """Add one dispatch to the in-process tally (no database access)."""
    key = (provider, _minute(at or timezone.now()))
    with _state.lock:
        tally = _state.tallies[key]
        tally.dispatches += 1
        tally.attempts += attempts
        tally.latency_total_ms += max(0, latency_ms)
        tally.latency_max_ms = max(tally.latency_max_ms, latency_ms)
        if ok:
            tally.succeeded += 1
        elif outcome_unknown:
            tally.unknown += 1
        else:
            tally.failed += 1
        if error_code:
            tally.last_error_code = error_code


def provider_health_flush() -> int:
    """Write the tally (one increment per provider and minute); returns the number of rows touched."""
    from delivery.models import ProviderHealth

    with _state.lock:
        pending = dict(_state.tallies)
        _state.tallies.clear()
    for (provider, minute), tally in pending.items():
        updates: dict[str, Any] = {
            name: F(name) + getattr(tally, name)
            for name in ("dispatches", "succeeded", "failed", "unknown", "attempts", "latency_total_ms")
        }
        updates["latency_max_ms"] = Greatest(F("latency_max_ms"), tally.latency_max_ms)
        if tally.last_error_code:
            updates["last_error_code"] = tally.last_error_code
        rows = ProviderHealth.objects.filter(provider=provider, minute=minute)
        if rows.update(**updates):
            continue
        try:
            with transaction.atomic():
                ProviderHealth.objects.create(provider=provider, minute=minute, **vars(tally))
        except IntegrityError:  # another worker created the minute's row first
            rows.update(**updates)
    return len(pending)


@dataclass(frozen=True)
class HealthSummary:
    provider: str
    dispatches: int
    succeeded: int
    failed: int
    unknown: int
    attempts: int
    latency_avg_ms: int | None
    latency_max_ms: int

    @property
    def success_rate(self) -> float | None:
        return self.succeeded / self.dispatches if self.dispatches else None


def provider_health_summary(*, window: dt.timedelta, now: dt.datetime | None = None) -> list[HealthSummary]:
    """Per provider over the last `window`: dispatches, outcomes, attempts, average and worst latency."""
    from delivery.models import ProviderHealth

    since = _minute((now or timezone.now()) - window)
    rows = (
        ProviderHealth.objects.filter(minute__gte=since)
        .values("provider")
        .annotate(
            n=Sum("dispatches"),
            ok=Sum("succeeded"),
            bad=Sum("failed"),
            unk=Sum("unknown"),
            tries=Sum("attempts"),
            total=Sum("latency_total_ms"),
            worst=Max("latency_max_ms"),
        )
        .order_by("provider")
    )
    return [
        HealthSummary(
            provider=r["provider"],
            dispatches=r["n"] or 0,
            succeeded=r["ok"] or 0,
            failed=r["bad"] or 0,
            unknown=r["unk"] or 0,
            attempts=r["tries"] or 0,
            latency_avg_ms=round(r["total"] / r["n"]) if r["n"] else None,
            latency_max_ms=r["worst"] or 0,
        )
        for r in rows
    ]
