"""Agent circuit breakers (AGT-20 decision step 1): while one is open, no draft is auto-sent — the route step
sends every message to human review with the breaker's reason.

What trips them (per organization; the decisions this project made, the spec only names the three):

* `llm_failure` — `LLM_FAILURE_TRIP` (5) pipeline steps failed on a model call (timeout, connection, bad answer)
  within `LLM_FAILURE_WINDOW` (10 minutes).
* `confidence_degradation` — the mean draft-quality score of the last `QUALITY_WINDOW` (20) drafts falls below
  `QUALITY_TRIP_MEAN` (0.5), once at least `QUALITY_MIN_SAMPLES` (10) drafts were scored (a draft whose
  self-check failed counts as 0, as the route step scores it).
* `rejection_spike` — `REJECTION_TRIP` (5) or more of the last `REJECTION_WINDOW` (10) human decisions on
  drafts (approve / reject) were rejections.

What pauses: auto-send only. Messages are still scanned, classified and drafted; the route step routes them to
human review ("Circuit breaker … is open"), and tripping cancels the organization's pending autonomous sends
(undo windows, AGT-26) back to `draft_ready`. Human approvals are unaffected.

How they reset: automatically after `COOLDOWN` (30 minutes; `closes_at`), half-open — the recent samples stay,
so one more bad observation trips it again at once; or by an operator ("Close breaker" in the admin), which also
clears the samples so the rule starts from fresh evidence.

This module is the only writer of `CircuitBreaker` rows (row lock per organization and kind)."""

from __future__ import annotations

import datetime as dt
import logging
from typing import Any

from django.db import transaction
from django.db.models import Q, QuerySet
from django.utils import timezone

from inbox import sql
from inbox.models import BreakerKind, CircuitBreaker

logger = logging.getLogger(__name__)

COOLDOWN = dt.timedelta(minutes=30)
LLM_FAILURE_TRIP = 5
LLM_FAILURE_WINDOW = dt.timedelta(minutes=10)
QUALITY_WINDOW = 20
QUALITY_MIN_SAMPLES = 10
QUALITY_TRIP_MEAN = 0.5
REJECTION_WINDOW = 10
REJECTION_TRIP = 5


def open_breakers_qs(organization_id: Any, now: dt.datetime | None = None) -> QuerySet[CircuitBreaker]:
    """Open breakers of one organization (None: of every organization)."""
    now = now or timezone.now()
    qs = CircuitBreaker.objects.filter(opened_at__isnull=False).filter(
        Q(closes_at__isnull=True) | Q(closes_at__gt=now)
    )
    if organization_id is not None:
        qs = qs.filter(organization_id=organization_id)
    return qs.order_by("kind")


def open_breaker(organization_id: Any, now: dt.datetime | None = None) -> CircuitBreaker | None:
    """The first open breaker of the organization (the route gate), or None."""
    if organization_id is not None and sql.enabled():
        # the route step's gate, once per message: `open_breakers_qs(…).first()` written out and prepared
        now = now or timezone.now()
        row = sql.fetchone(sql.breaker_open_sql(), [now, sql.uuid_text(organization_id)])
        return None if row is None else sql.build(CircuitBreaker, row)
    return open_breakers_qs(organization_id, now).first()


def _save(row: CircuitBreaker) -> None:
    """`row.save()` after an observation: the fields it may have changed, and `updated_at`."""
    if not sql.enabled():
        row.save()
        return
    row.updated_at = timezone.now()
    values = [sql.db_value(CircuitBreaker, name, getattr(row, name)) for name in sql.BREAKER_OBSERVED]
    sql.execute(sql.breaker_save_sql(), [*values, row.updated_at, row.pk])


def _locked(organization_id: Any, kind: str) -> CircuitBreaker:
    if sql.enabled():
        found = sql.fetchone(sql.breaker_locked_sql(), [sql.uuid_text(organization_id), kind])
        row = None if found is None else sql.build(CircuitBreaker, found)
    else:
        row = (
            CircuitBreaker.objects.select_for_update()
            .filter(organization_id=organization_id, kind=kind)
            .first()
        )
    if row is None:
        CircuitBreaker.objects.get_or_create(organization_id=organization_id, kind=kind)
        row = CircuitBreaker.objects.select_for_update().get(organization_id=organization_id, kind=kind)
    return row


def _trip(row: CircuitBreaker, reason: str, now: dt.datetime) -> None:
    row.opened_at = now
    row.closes_at = now + COOLDOWN
    row.reason = reason
    row.trip_count += 1
    logger.warning("inbox circuit breaker %s opened for %s: %s", row.kind, row.organization_id, reason)
    organization_id = row.organization_id

    def cancel_pending() -> None:
        from inbox.review import auto_sends_cancel_all

        auto_sends_cancel_all(
            organization_id=organization_id, actor=f"system:breaker:{row.kind}", reason="circuit_breaker"
        )

    transaction.on_commit(cancel_pending)


def _observe(organization_id: Any, kind: str, sample: Any, now: dt.datetime | None) -> bool:
    """Append one observation and trip the breaker if its rule says so. Returns whether it is open now."""
    now = now or timezone.now()
    with transaction.atomic():
        row = _locked(organization_id, kind)
        samples = list(row.samples or [])
        samples.append(sample)
        reason = None
        if kind == BreakerKind.LLM_FAILURE:
            since = (now - LLM_FAILURE_WINDOW).isoformat()
            samples = [s for s in samples if s >= since][-LLM_FAILURE_TRIP * 4 :]
            if len(samples) >= LLM_FAILURE_TRIP:
                reason = f"{len(samples)} model calls failed within {int(LLM_FAILURE_WINDOW.seconds // 60)} minutes."
        elif kind == BreakerKind.CONFIDENCE_DEGRADATION:
            samples = samples[-QUALITY_WINDOW:]
            mean = sum(samples) / len(samples)
            if len(samples) >= QUALITY_MIN_SAMPLES and mean < QUALITY_TRIP_MEAN:
                reason = f"Mean draft quality {mean:.2f} over the last {len(samples)} drafts is below {QUALITY_TRIP_MEAN}."
        else:
            samples = samples[-REJECTION_WINDOW:]
            rejected = samples.count("rejected")
            if rejected >= REJECTION_TRIP:
                reason = f"{rejected} of the last {len(samples)} reviewed drafts were rejected."
        row.samples = samples
        already_open = row.is_open(now)
        if reason and not already_open:
            _trip(row, reason, now)
        _save(row)
        return row.is_open(now)


def llm_failure_record(organization_id: Any, now: dt.datetime | None = None) -> bool:
    now = now or timezone.now()
    return _observe(organization_id, BreakerKind.LLM_FAILURE, now.isoformat(), now)


def draft_quality_record(organization_id: Any, score: float | None, now: dt.datetime | None = None) -> bool:
    return _observe(organization_id, BreakerKind.CONFIDENCE_DEGRADATION, float(score or 0.0), now)


def review_decision_record(organization_id: Any, decision: str, now: dt.datetime | None = None) -> bool:
    """`decision`: "approved" or "rejected" (a human's verdict on an agent draft)."""
    return _observe(organization_id, BreakerKind.REJECTION_SPIKE, decision, now)


def breakers_of(organization_id: Any) -> list[CircuitBreaker]:
    """The organization's three breakers in `BreakerKind` order; a kind that never observed anything is an
    unsaved closed row (the admin lists stored rows only; the API always answers all three)."""
    stored = {b.kind: b for b in CircuitBreaker.objects.filter(organization_id=organization_id)}
    return [
        stored.get(kind) or CircuitBreaker(organization_id=organization_id, kind=kind) for kind in BreakerKind
    ]


def breaker_close(
    breaker_id: Any = None, *, organization_id: Any = None, kind: str | None = None, actor: str | None = None
) -> bool:
    """Operator reset: close the breaker (by id, or by the organization and kind) and forget its samples.
    With `actor`, an audit row `inbox.breaker_closed` records who (only when it was open)."""
    from owlat.audit import audit_write

    with transaction.atomic():
        qs = CircuitBreaker.objects.select_for_update()
        qs = qs.filter(pk=breaker_id) if breaker_id is not None else qs.filter(kind=kind)
        if organization_id is not None:
            qs = qs.filter(organization_id=organization_id)
        row = qs.first()
        if row is None:
            return False
        was_open = row.is_open()
        row.opened_at = None
        row.closes_at = None
        row.samples = []
        row.save(update_fields=["opened_at", "closes_at", "samples", "updated_at"])
        if actor is not None and was_open:
            audit_write(
                organization_id=row.organization_id,
                actor=actor,
                action="inbox.breaker_closed",
                resource="circuit_breaker",
                resource_id=row.kind,
            )
    return True
