"""Counters without hot rows (refines AUT-05 and AUT-02's single-row increments).

Writers (`automations.lifecycle`) record every counter move as an `AutomationCounterDelta` row in their own
transaction — an insert, so no request or worker waits on another's lock of the shared automation or step row
(`stats_entered` no longer locks the automation row inside the caller's transaction).
`counters_rollup` folds the pending deltas into `Automation.stats_*` and `AutomationStep.stat_*` in one
statement (`DELETE … RETURNING` feeding the two UPDATEs, so each delta is applied exactly once); it runs every
minute (`automations.schedules`) and before the backfill compares counters with the rows.
Readers stay exact at any moment: they add the pending deltas to the stored values (`counters_overlay`), which
is what the admin funnel, the API stats and the dashboard show (our choice: read rolled-up + pending rather than
roll up on read, so a page view never waits on a roll-up either).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from typing import Any

from django.db import connection, transaction
from django.db.models import F, Q, Sum, Value
from django.db.models.functions import Greatest
from django.utils import timezone

from automations.models import Automation, AutomationCounterDelta, AutomationStep, StepRunStatus

RUN_FIELDS = {"entered": "stats_entered", "completed": "stats_completed", "cancelled": "stats_cancelled"}
STEP_FIELDS = {status: f"stat_{status}" for status in StepRunStatus.values}
_ROLLUP_LOCK = 0x0A17_0C0F  # pg advisory lock key: one roll-up at a time (no deadlocks between roll-ups)


def record_run_counts(per_automation: dict[Any, dict[str, int]]) -> None:
    """Record run-counter moves (`entered`, `completed`, `cancelled`) per automation, one insert."""
    _insert_deltas(
        "automation_id",
        [
            (automation_id, name, delta)
            for automation_id, moves in per_automation.items()
            for name, delta in moves.items()
            if delta and automation_id is not None
        ],
    )


def record_step_counts(per_step: dict[Any, dict[str, int]]) -> None:
    """Record per-step counter moves (step-run statuses) per step, one insert."""
    _insert_deltas(
        "step_id",
        [
            (step_id, status, delta)
            for step_id, moves in per_step.items()
            for status, delta in moves.items()
            if delta and step_id is not None
        ],
    )


def _insert_deltas(column: str, rows: list[tuple[Any, str, int]]) -> None:
    """One insert of (id, field, delta) rows (`automations.sql.counter_deltas_insert` on PostgreSQL)."""
    if not rows:
        return
    if connection.vendor != "postgresql":
        AutomationCounterDelta.objects.bulk_create(
            [AutomationCounterDelta(**{column: pk}, field=name, delta=delta) for pk, name, delta in rows]
        )
        return
    from automations.sql import counter_deltas_insert

    counter_deltas_insert(column, rows)


def counters_rollup(*, automation_ids: Iterable[Any] | None = None, wait: bool = True) -> int:
    """Fold pending deltas (all, or those of `automation_ids` and their steps) into the counter rows; returns
    how many deltas were applied. With `wait=False` (the cron) it returns 0 at once if another roll-up runs."""
    if connection.vendor != "postgresql":
        return _rollup_serialized(automation_ids)
    from automations.sql import counters_fold

    ids = None
    if automation_ids is not None:
        ids = [str(i) for i in automation_ids]
        if not ids:
            return 0
    return counters_fold(
        lock=_ROLLUP_LOCK, wait=wait, automation_ids=ids, run_fields=RUN_FIELDS, step_fields=STEP_FIELDS
    )


def _rollup_serialized(automation_ids: Iterable[Any] | None) -> int:
    """`counters_rollup` where writers are serialized (SQLite: every transaction begins IMMEDIATE, so the
    deltas read here are the ones deleted, and no other roll-up runs meanwhile): read, delete and fold the
    deltas through the ORM, each counter floored at 0 as on PostgreSQL."""
    deltas = AutomationCounterDelta.objects.all()
    if automation_ids is not None:
        ids = list(automation_ids)
        if not ids:
            return 0
        steps = AutomationStep.objects.filter(automation_id__in=ids).values("pk")
        deltas = deltas.filter(Q(automation_id__in=ids) | Q(step_id__in=steps))
    with transaction.atomic():
        rows = list(deltas.values_list("automation_id", "step_id", "field", "delta"))
        if not rows:
            return 0
        deltas.delete()
        runs: dict[Any, dict[str, int]] = defaultdict(lambda: defaultdict(int))
        per_step: dict[Any, dict[str, int]] = defaultdict(lambda: defaultdict(int))
        for automation_id, step_id, name, delta in rows:
            if automation_id is not None and name in RUN_FIELDS:
                runs[automation_id][RUN_FIELDS[name]] += delta
            elif step_id is not None and name in STEP_FIELDS:
                per_step[step_id][STEP_FIELDS[name]] += delta
        now = timezone.now()
        for pk, moves in runs.items():
            Automation.objects.filter(pk=pk).update(**_floored(moves), stats_updated_at=now)
        for pk, moves in per_step.items():
            AutomationStep.objects.filter(pk=pk).update(**_floored(moves))
    return len(rows)


def _floored(moves: dict[str, int]) -> dict[str, Any]:
    return {column: Greatest(F(column) + Value(delta), Value(0)) for column, delta in moves.items()}


def pending_run_counts(automation_ids: Iterable[Any]) -> dict[Any, dict[str, int]]:
    out: dict[Any, dict[str, int]] = defaultdict(dict)
    rows = (
        AutomationCounterDelta.objects.filter(automation_id__in=list(automation_ids))
        .values_list("automation_id", "field")
        .annotate(total=Sum("delta"))
    )
    for automation_id, name, total in rows:
        out[automation_id][name] = total or 0
    return out


def pending_step_counts(step_ids: Iterable[Any]) -> dict[Any, dict[str, int]]:
    out: dict[Any, dict[str, int]] = defaultdict(dict)
    rows = (
        AutomationCounterDelta.objects.filter(step_id__in=list(step_ids))
        .values_list("step_id", "field")
        .annotate(total=Sum("delta"))
    )
    for step_id, name, total in rows:
        out[step_id][name] = total or 0
    return out


def counters_overlay(automations: Iterable[Automation] = (), steps: Iterable[AutomationStep] = ()) -> None:
    """Add the pending deltas to loaded rows, in memory (floor 0): what a roll-up would make them now."""
    automations = [a for a in automations if not getattr(a, "_counters_overlaid", False)]
    steps = [s for s in steps if not getattr(s, "_counters_overlaid", False)]
    for obj in (*automations, *steps):
        obj._counters_overlaid = True
    if automations:
        pending = pending_run_counts(a.pk for a in automations)
        now = timezone.now()
        for automation in automations:
            for name, column in RUN_FIELDS.items():
                moved = pending.get(automation.pk, {}).get(name, 0)
                if moved:
                    setattr(automation, column, max(0, getattr(automation, column) + moved))
            if automation.pk in pending:
                automation.stats_updated_at = now  # the counters shown are as of now
    if steps:
        pending = pending_step_counts(s.pk for s in steps)
        for step in steps:
            for name, column in STEP_FIELDS.items():
                moved = pending.get(step.pk, {}).get(name, 0)
                if moved:
                    setattr(step, column, max(0, getattr(step, column) + moved))
