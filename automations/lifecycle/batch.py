"""Set-based writes of step runs and runs for the batched walker, on the kernel's set-based
runner (`Lifecycle.transition_many`, `Lifecycle.create_many`):

- `step_runs_claim_due`: the batch claim `pending → executing` (AUT-21) as one
  `UPDATE … WHERE id = ANY(ARRAY(SELECT … FOR UPDATE SKIP LOCKED)) RETURNING` that also counts the execution on
  each run (`steps_executed`, the loop cap of AUT-25) — so two claimers never take the same row;
- `step_runs_complete_many`, `step_runs_fail_many`, `runs_finish_many`: one compare-and-set per edge;
- `step_runs_create_many` (pending rows, one insert) and `step_runs_skip_many` (rows created `skipped`, AUT-23).

Counters move through the same delta helpers as the single-row writers (`automations.lifecycle.runs`). The runs
AUT-17's fan-out opens are in `automations.lifecycle.opening`.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from django.db import connection, transaction
from django.db.models import F

from automations.lifecycle import sql
from automations.lifecycle.runs import (
    ACTOR,
    CANCELLED,
    COMPLETED,
    DONE,
    EXECUTING,
    FAILED,
    PENDING,
    RUNS,
    SKIPPED,
    STEP_RUNS,
    _step_counters_apply,
)
from automations.models import Automation, AutomationRun, AutomationStep, AutomationStepRun
from owlat.lifecycle import Move
from owlat.models import Contact
from owlat.sql import model_from_row


@dataclass
class ClaimedStepRun:
    """A step run this worker holds: `attempt` 0 = first dispatch, n = the nth retry; `executed` = the run's
    `steps_executed` after this claim (None for a retry, which is not a new execution)."""

    step_run: AutomationStepRun
    attempt: int = 0
    executed: int | None = None
    #: The run as read by the claim statement, its contact and automation attached (None: not read with the
    #: claim, or the run is gone); the executor reads the runs it lacks.
    run: AutomationRun | None = None


def step_runs_claim_due(
    *, at: dt.datetime, limit: int, ids: Sequence[Any] | None = None
) -> list[ClaimedStepRun]:
    """Claim up to `limit` pending step runs that are due (`delay_until` null or passed), or exactly the pending
    ones among `ids` (an explicit dispatch: its due time has come), in one statement: the rows move
    `pending → executing` (`started_at`, attempt 0), each run's `steps_executed` goes up by one, the per-step
    counters move (pending −1, executing +1, as counter deltas), and the claimed rows come back whole with the
    run's new count. Rows another claimer holds are skipped, never waited for."""
    if connection.vendor != "postgresql":
        return _claim_due_serialized(at=at, limit=limit, ids=ids)
    rows = sql.step_runs_claim(at=at, limit=limit, ids=ids, with_claim=_WITH_CLAIM)
    fields = AutomationStepRun._meta.concrete_fields
    n = len(fields)
    out = []
    automations: dict[Any, Automation] = {}  # a batch's runs mostly share one or a few automations
    for row in rows:
        executed = row[n]
        run = _run_with_claim(row[n + 1 :], automations)
        if run is not None and executed is not None:
            run.steps_executed = executed  # the statement's own increment (its reads see the row before it)
        step_run = model_from_row(AutomationStepRun, row[:n], connection=connection)
        out.append(ClaimedStepRun(step_run, 0, executed, run))
    return out


def _claim_due_serialized(*, at: dt.datetime, limit: int, ids: Sequence[Any] | None) -> list[ClaimedStepRun]:
    """`step_runs_claim_due` where writers are serialized (SQLite: every transaction begins IMMEDIATE, so the
    rows read here stay as read until the commit and no other claimer can take them): the same moves through
    the set-based runner (which records the counter deltas), due rows whose delay has passed first."""
    pending = AutomationStepRun.objects.filter(status=PENDING)
    with transaction.atomic():
        if ids is not None:
            due = list(pending.filter(pk__in=list(ids)).values_list("pk", flat=True)[:limit])
        else:
            due = list(pending.filter(delay_until__lte=at).values_list("pk", flat=True)[:limit])
            if len(due) < limit:
                now_due = pending.filter(delay_until__isnull=True).values_list("pk", flat=True)
                due += list(now_due[: limit - len(due)])
        if not due:
            return []
        rows = list(AutomationStepRun.objects.filter(pk__in=due))
        outcomes = STEP_RUNS.transition_many([Move(sr, EXECUTING) for sr in rows], actor=ACTOR, at=at)
        won = {o.object_id for o in outcomes if o.ok and o.applied == "transitioned"}
        claimed = [sr for sr in rows if sr.pk in won]
        run_ids = {sr.run_id for sr in claimed}
        AutomationRun.objects.filter(pk__in=run_ids).update(steps_executed=F("steps_executed") + 1)
        runs = AutomationRun.objects.select_related("contact", "automation").in_bulk(run_ids)
    out = []
    for sr in claimed:
        run = runs.get(sr.run_id)
        out.append(ClaimedStepRun(sr, 0, run.steps_executed if run else None, run))
    return out


#: What the claim statement reads with each claimed step run (the executor's run, contact and automation).
_WITH_CLAIM: tuple[tuple[str, type], ...] = (("r", AutomationRun), ("c", Contact), ("a", Automation))


def _run_with_claim(values: tuple, automations: dict[Any, Automation]) -> AutomationRun | None:
    """The run, with its contact and automation attached, from the claim statement's joined columns (as
    `select_related("contact", "automation")` builds them: `owlat.sql.model_from_row`, converters and `from_db`). The
    automation is built once per claim (`automations`, by id): the runs of one automation share its instance,
    as the executor uses one per automation anyway (the statement read the row once for all of them)."""
    built: dict[type, Any] = {}
    start = 0
    for _, model in _WITH_CLAIM:
        width = len(model._meta.concrete_fields)
        part = values[start : start + width]
        start += width
        if part[0] is None:  # the primary key: no such row
            built[model] = None
            continue
        key = part[0]
        if model is Automation and key in automations:
            built[model] = automations[key]
            continue
        built[model] = model_from_row(model, part, connection=connection)
        if model is Automation:
            automations[key] = built[model]
    run = built[AutomationRun]
    if run is None:
        return None
    run._state.fields_cache["contact"] = built[Contact]  # as select_related caches them
    run._state.fields_cache["automation"] = built[Automation]
    return run


def step_runs_complete_many(
    items: Iterable[tuple[AutomationStepRun, int, str | None, str | None]], *, at: dt.datetime
) -> set[Any]:
    """`executing → completed` for (step run, attempt, email_send_id, note), each only by the attempt that holds
    it; returns the ids of the step runs completed (the others are not this worker's any more)."""
    moves = [
        Move(sr, DONE, {"attempt": attempt, "email_send_id": send_id, "note": note})
        for sr, attempt, send_id, note in items
    ]
    outcomes = STEP_RUNS.transition_many(moves, actor=ACTOR, at=at)
    return {o.object_id for o in outcomes if o.ok and o.applied == "transitioned"}


def step_runs_fail_many(
    items: Iterable[tuple[AutomationStepRun, str, int | None]], *, at: dt.datetime
) -> set[Any]:
    """`pending|executing → failed` for (step run, error, retry_count or None); returns the ids failed now."""
    moves = [Move(sr, FAILED, {"error": error, "retry_count": retries}) for sr, error, retries in items]
    outcomes = STEP_RUNS.transition_many(moves, actor=ACTOR, at=at)
    return {o.object_id for o in outcomes if o.ok and o.applied == "transitioned"}


def runs_finish_many(items: Iterable[tuple[AutomationRun, str]], *, at: dt.datetime) -> set[Any]:
    """`running → completed|cancelled` (AUT-28) for (run, target); returns the ids finished now."""
    moves = [Move(run, to, {}) for run, to in items if to in (COMPLETED, CANCELLED)]
    outcomes = RUNS.transition_many(moves, actor=ACTOR, at=at)
    return {o.object_id for o in outcomes if o.ok and o.applied == "transitioned"}


def _pending_row(
    run: AutomationRun,
    step: AutomationStep,
    *,
    scheduled_at: dt.datetime,
    delay_until: dt.datetime | None = None,
) -> AutomationStepRun:
    """A new step-run row (created `pending`, the initial status) of `run` at `step`."""
    return AutomationStepRun(
        organization_id=run.organization_id,
        run_id=run.pk,
        step_id=step.pk,
        step_index=step.step_index,
        step_type=step.step_type,
        status=PENDING,
        scheduled_at=scheduled_at,
        delay_until=delay_until,
    )


def step_runs_create_many(
    items: Iterable[tuple[AutomationRun, AutomationStep, dt.datetime, dt.datetime | None]],
) -> list[AutomationStepRun]:
    """Pending step runs for (run, step, scheduled_at, delay_until) in one insert; +1 pending per step."""
    rows = [
        _pending_row(run, step, scheduled_at=scheduled_at, delay_until=delay_until)
        for run, step, scheduled_at, delay_until in items
    ]
    if not rows:
        return []
    AutomationStepRun.objects.bulk_create(rows)
    deltas: dict[Any, dict[str, int]] = {}
    for row in rows:
        deltas.setdefault(row.step_id, {PENDING: 0})[PENDING] += 1
    _step_counters_apply(deltas)
    return rows


def step_runs_advance_many(
    items: Sequence[tuple[AutomationRun, AutomationStep, dt.datetime, dt.datetime | None]],
) -> list[AutomationStepRun]:
    """The walker's advance of many runs: for (run, step, scheduled_at, delay_until) the run moves to `step`
    (`current_step_index`, `next_step_at` = `delay_until`, in memory too) and gets its `pending` step run at
    it (+1 pending per step, a counter delta). On PostgreSQL one statement (data-modifying CTEs over
    `unnest` arrays: no per-row SQL or `bulk_update` CASE to build), elsewhere an update per run and
    `step_runs_create_many`. Returns the step runs created, in order."""
    if not items:
        return []
    for run, step, _, delay_until in items:
        run.current_step_index, run.next_step_at = step.step_index, delay_until
    if connection.vendor != "postgresql":
        for run, _, _, _ in items:
            AutomationRun.objects.filter(pk=run.pk).update(
                current_step_index=run.current_step_index, next_step_at=run.next_step_at
            )
        return step_runs_create_many(items)
    rows = [
        _pending_row(run, step, scheduled_at=scheduled_at, delay_until=delay_until)
        for run, step, scheduled_at, delay_until in items
    ]
    for row in rows:
        row._state.adding = False
        row._state.db = "default"
    sql.step_runs_advance(rows)
    return rows


def step_runs_skip_many(
    items: Iterable[tuple[AutomationRun, Iterable[AutomationStep]]], *, at: dt.datetime
) -> list[AutomationStepRun]:
    """AUT-23 for many runs at once: the bypassed steps' rows created through `pending → skipped`."""
    rows = [_pending_row(run, step, scheduled_at=at) for run, steps in items for step in steps]
    return STEP_RUNS.create_many([Move(row, SKIPPED, {"created": True}) for row in rows], actor=ACTOR, at=at)
