"""Run and step-run statuses (AUT-03, AUT-04, AUT-21, AUT-23, AUT-26, AUT-28) on the shared runner (D-04).

- `AutomationRun.status`: `RunLifecycle` with the pure reducer `run_reduce`; `run_open` (creation),
  `run_complete`, `run_cancel` (duplicates are no-ops, AUT-28). A finished run is counted on its automation
  (`stats_completed` / `stats_cancelled`); a completed run resets the breaker counter (AUT-27).
- `AutomationStepRun.status`: `StepRunLifecycle` with the pure reducer `step_run_reduce`; `step_run_create`
  (creation, `pending`), `step_runs_skip` (rows created through the declared edge `pending → skipped`,
  AUT-23), the claim `step_run_claim` (the declared edge `pending → executing`, applied as a compare-and-set
  by the set-based runner, AUT-21) and the retry claim `step_run_claim_retry` (a compare-and-set on
  (`executing`, `retry_count`, `attempt`), refining AUT-21 so a retry delivered twice runs once),
  `step_run_complete` (only by the attempt that holds the step run), `step_run_fail`.
  Every step-run status change moves one unit between the per-step counters of AUT-02 (creation +1, floor 0).

Both lifecycles write no audit rows (a run's timestamps and step runs are its history) and join the caller's
transaction without a savepoint: they are all-or-nothing with the walker step that calls them.
"""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from collections.abc import Iterable
from typing import Any

from django.db import IntegrityError, transaction
from django.db.models import F
from django.utils import timezone

from automations.models import (
    Automation,
    AutomationRun,
    AutomationStep,
    AutomationStepRun,
    RunStatus,
    StepRunStatus,
)
from owlat.lifecycle import Call, Decision, Lifecycle, Move, legal_edges

ACTOR = "system:automations"

RUNNING, COMPLETED, CANCELLED = RunStatus.RUNNING.value, RunStatus.COMPLETED.value, RunStatus.CANCELLED.value
PENDING, EXECUTING, DONE, FAILED, SKIPPED = (
    StepRunStatus.PENDING.value,
    StepRunStatus.EXECUTING.value,
    StepRunStatus.COMPLETED.value,
    StepRunStatus.FAILED.value,
    StepRunStatus.SKIPPED.value,
)
STEP_RUN_TERMINAL = frozenset({DONE, FAILED, SKIPPED})

#: The graphs, read from the django-fsm declarations on the models.
RUN_EDGES: frozenset[tuple[str, str]] = legal_edges(AutomationRun, "status")
STEP_RUN_EDGES: frozenset[tuple[str, str]] = legal_edges(AutomationStepRun, "status")


# --- Pure reducers -------------------------------------------------------------------------------------------


def run_reduce(*, frm: str, to: str, at: dt.datetime) -> Decision:
    """AUT-28: `running → completed|cancelled` sets `completed_at` and clears `next_step_at`; the finished
    run is counted. Repeating the same finish is a duplicate; any other move is refused."""
    if (frm, to) in RUN_EDGES:
        return Decision.accept(
            {"status": to, "completed_at": at, "next_step_at": None}, effects=(Call("count", {"to": to}),)
        )
    if frm == to and frm != RUNNING:
        return Decision.accept({}, applied="duplicate")
    return Decision.refuse("not_running" if frm != RUNNING else "illegal_edge")


def step_run_reduce(
    *, frm: str, to: str, retry_count: int, attempt: int, input: dict[str, Any], at: dt.datetime
) -> Decision:
    """AUT-04, AUT-21, AUT-23, AUT-26 as a pure function of the row's state, `retry_count` and `attempt`.

    - claim, `input.retry_count` 0 (the default): `pending → executing`, `started_at`, attempt 0;
    - retry claim, `input.retry_count` = n ≥ 1: allowed only on an `executing` row whose `retry_count` is n
      (the retry that was scheduled) and whose `attempt` is below n (no other delivery took it); it moves
      `attempt` to n under a guard on both values, so of two deliveries of one retry exactly one wins;
    - `executing → completed`, only for the attempt that holds the row (`input.attempt`);
    - `pending|executing → failed` with `input.error` (and `input.retry_count` when retries ran out);
    - `pending → skipped` (forward branch); `input.created`: the row is being created through this edge;
    - repeating a terminal state is a duplicate; leaving one is refused (`terminal`, AUT-21: ignored).
    """
    if to == EXECUTING:
        wanted = input.get("retry_count", 0)
        if wanted == 0:
            if frm != PENDING:
                return Decision.refuse("not_claimable")
            return Decision.accept(
                {"status": EXECUTING, "started_at": at, "attempt": 0},
                effects=(Call("count", {"frm": frm, "to": to}),),
            )
        if frm != EXECUTING or retry_count != wanted or attempt >= wanted:
            return Decision.refuse("not_claimable")
        return Decision.accept(
            {"attempt": wanted}, applied="recorded", guard={"retry_count": retry_count, "attempt": attempt}
        )
    if frm == to and frm in STEP_RUN_TERMINAL:
        return Decision.accept({}, applied="duplicate")
    if (frm, to) not in STEP_RUN_EDGES:
        return Decision.refuse("terminal" if frm in STEP_RUN_TERMINAL else "illegal_edge")
    count = Call("count", {"frm": None if input.get("created") else frm, "to": to})
    if to == DONE:
        if input.get("attempt", attempt) != attempt:
            return Decision.refuse("not_owner")
        patch = {
            "status": DONE,
            "completed_at": at,
            "email_send_id": input.get("email_send_id"),
            "note": input.get("note"),
        }
        return Decision.accept(patch, effects=(count,), guard={"attempt": attempt})
    if to == FAILED:
        patch = {"status": FAILED, "completed_at": at, "error_message": input.get("error")}
        if input.get("retry_count") is not None:
            patch["retry_count"] = input["retry_count"]
        return Decision.accept(patch, effects=(count,))
    return Decision.accept({"status": SKIPPED, "completed_at": at}, effects=(count,))  # pending → skipped


# --- Counters (AUT-05, AUT-02) -------------------------------------------------------------------------------


def _step_counters_apply(deltas: dict[Any, dict[str, int]]) -> None:
    """Per-step counter moves recorded as deltas (one insert, no lock on the step rows)."""
    from automations.counters import record_step_counts

    record_step_counts(deltas)


def _count_step_runs(items: list[tuple[Any, dict[str, Any]]]) -> None:
    deltas: dict[Any, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for step_run, kwargs in items:
        if kwargs["frm"] is not None:
            deltas[step_run.step_id][kwargs["frm"]] -= 1
        deltas[step_run.step_id][kwargs["to"]] += 1
    _step_counters_apply(deltas)


def _count_runs(items: list[tuple[Any, dict[str, Any]]]) -> None:
    """Finished runs per automation as counter deltas; a completed run also resets the
    breaker (AUT-27) — an UPDATE only where the counter is not 0 already, so the common case locks nothing."""
    from automations.counters import record_run_counts

    per: dict[Any, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for run, kwargs in items:
        per[run.automation_id][kwargs["to"]] += 1
    record_run_counts(per)
    reset = [automation_id for automation_id, counts in per.items() if counts[COMPLETED]]
    if not reset:
        return
    Automation.objects.filter(pk__in=reset, consecutive_run_failures__gt=0).update(consecutive_run_failures=0)


# --- The lifecycles ------------------------------------------------------------------------------------------


class RunLifecycle(Lifecycle):
    model = AutomationRun
    resource = "automation_run"
    not_found_reason = "run_not_found"
    messages = {"run_not_found": "Automation run not found", "not_running": "The run is not running"}
    self_loop = "reducer"
    writes_audit = False
    savepoint = False

    def reduce(
        self, obj: Any, frm: str, to: str, *, input: dict[str, Any], actor: str, at: dt.datetime
    ) -> Decision:
        return run_reduce(frm=frm, to=to, at=at)

    def effect_handlers(self) -> dict[str, Any]:
        return {"count": lambda run, **kwargs: _count_runs([(run, kwargs)])}

    def batch_effect_handlers(self) -> dict[str, Any]:
        return {"count": _count_runs}


class StepRunLifecycle(Lifecycle):
    model = AutomationStepRun
    resource = "automation_step_run"
    not_found_reason = "step_run_not_found"
    messages = {"step_run_not_found": "Step run not found"}
    self_loop = "reducer"
    writes_audit = False
    savepoint = False

    def reduce(
        self, obj: Any, frm: str, to: str, *, input: dict[str, Any], actor: str, at: dt.datetime
    ) -> Decision:
        return step_run_reduce(
            frm=frm, to=to, retry_count=obj.retry_count, attempt=obj.attempt, input=input, at=at
        )

    def effect_handlers(self) -> dict[str, Any]:
        return {"count": lambda step_run, **kwargs: _count_step_runs([(step_run, kwargs)])}

    def batch_effect_handlers(self) -> dict[str, Any]:
        return {"count": _count_step_runs}


RUNS = RunLifecycle()
STEP_RUNS = StepRunLifecycle()


# --- Runs (AUT-03, AUT-17, AUT-28) ---------------------------------------------------------------------------


def run_open(
    *,
    automation: Automation,
    contact_id: Any,
    triggered_by: str,
    trigger_data: dict[str, Any] | None,
    at: dt.datetime,
) -> AutomationRun | None:
    """Insert a `running` run and count it as entered; None when the contact already has a running run.

    The partial unique index (AUT-17) decides races: the loser's insert fails inside a savepoint.
    """
    try:
        with transaction.atomic():
            run = AutomationRun.objects.create(
                organization_id=automation.organization_id,
                automation=automation,
                contact_id=contact_id,
                current_step_index=0,
                triggered_by=triggered_by,
                trigger_data=trigger_data,
                started_at=at,
            )
    except IntegrityError:
        return None
    from automations.counters import record_run_counts

    record_run_counts({automation.pk: {"entered": 1}})  # a delta: the automation row is not locked (item 2)
    return run


def _run_finish(run_id: Any, to: str, at: dt.datetime | None) -> bool:
    outcome = RUNS.transition(run_id, to, actor=ACTOR, at=at or timezone.now())
    return outcome.ok and outcome.applied == "transitioned"


def run_complete(run_id: Any, *, at: dt.datetime | None = None) -> bool:
    """AUT-28: complete a running run; False when it was not running (a duplicate is a no-op)."""
    return _run_finish(run_id, COMPLETED, at)


def run_cancel(run_id: Any, *, at: dt.datetime | None = None) -> bool:
    """AUT-28: cancel a running run; False when it was not running (a duplicate is a no-op)."""
    return _run_finish(run_id, CANCELLED, at)


# --- Step runs (AUT-04, AUT-21, AUT-23, AUT-26) -------------------------------------------------------------


def step_run_create(
    *,
    run: AutomationRun,
    step: AutomationStep,
    scheduled_at: dt.datetime,
    delay_until: dt.datetime | None = None,
) -> AutomationStepRun:
    """A `pending` step run; counts +1 on its step."""
    step_run = AutomationStepRun.objects.create(
        organization_id=run.organization_id,
        run=run,
        step=step,
        step_index=step.step_index,
        step_type=step.step_type,
        status=PENDING,
        scheduled_at=scheduled_at,
        delay_until=delay_until,
    )
    _step_counters_apply({step.pk: {PENDING: 1}})
    return step_run


def step_runs_skip(
    *, run: AutomationRun, steps: Iterable[AutomationStep], at: dt.datetime
) -> list[AutomationStepRun]:
    """AUT-23: one `skipped` step run per bypassed step, created through the declared edge `pending → skipped`
    (the reducer and the fsm transition on the unsaved rows, one insert, the counters in one UPDATE per step)."""
    rows = [
        AutomationStepRun(
            organization_id=run.organization_id,
            run=run,
            step=step,
            step_index=step.step_index,
            step_type=step.step_type,
            status=PENDING,
            scheduled_at=at,
        )
        for step in steps
    ]
    return STEP_RUNS.create_many([Move(row, SKIPPED, {"created": True}) for row in rows], actor=ACTOR, at=at)


def step_run_claim(step_run: AutomationStepRun, *, at: dt.datetime) -> int | None:
    """AUT-21: `pending → executing` as a compare-and-set (`UPDATE … WHERE status = 'pending'`); the winner
    also counts the execution on its run. Returns the run's new `steps_executed` for the winner, None for
    every loser. `step_run` is the row as the caller read it."""
    with transaction.atomic(savepoint=False):
        [outcome] = STEP_RUNS.transition_many([Move(step_run, EXECUTING)], actor=ACTOR, at=at)
        if not (outcome.ok and outcome.applied == "transitioned"):
            return None
        AutomationRun.objects.filter(pk=step_run.run_id).update(steps_executed=F("steps_executed") + 1)
        return (
            AutomationRun.objects.filter(pk=step_run.run_id).values_list("steps_executed", flat=True).first()
        )


def step_run_claim_retry(step_run: AutomationStepRun, *, retry_count: int, at: dt.datetime) -> bool:
    """AUT-21 refined for retries: the nth retry takes an `executing` step run whose scheduled retry is n and
    that no delivery of that retry took yet (compare-and-set on `retry_count` and `attempt`). A retry task
    delivered twice therefore executes once."""
    [outcome] = STEP_RUNS.transition_many(
        [Move(step_run, EXECUTING, {"retry_count": retry_count})], actor=ACTOR, at=at
    )
    return outcome.ok and outcome.applied == "recorded"


def step_run_complete(
    step_run_id: Any,
    *,
    at: dt.datetime,
    attempt: int = 0,
    email_send_id: str | None = None,
    note: str | None = None,
) -> bool:
    """`executing → completed` (AUT-20 step 6) by the attempt that holds the step run; False otherwise (the
    caller then rolls its step back instead of advancing the run)."""
    outcome = STEP_RUNS.transition(
        step_run_id,
        DONE,
        actor=ACTOR,
        at=at,
        input={"attempt": attempt, "email_send_id": email_send_id, "note": note},
    )
    return outcome.ok and outcome.applied == "transitioned"


def step_run_fail(step_run_id: Any, *, at: dt.datetime, error: str, retry_count: int | None = None) -> bool:
    """`pending|executing → failed` with the error; ignored if already completed, failed or skipped (AUT-21)."""
    outcome = STEP_RUNS.transition(
        step_run_id, FAILED, actor=ACTOR, at=at, input={"error": error, "retry_count": retry_count}
    )
    return outcome.ok and outcome.applied == "transitioned"


def step_run_note_retry(
    step_run_id: Any, *, attempt: int, retry_count: int, error: str, due: dt.datetime | None = None
) -> bool:
    """Record a scheduled retry (due at `due`) on a step run that stays `executing` and is held by `attempt`
    (AUT-26); not a status change. False when the attempt no longer holds it."""
    return bool(
        AutomationStepRun.objects.filter(pk=step_run_id, status=EXECUTING, attempt=attempt).update(
            retry_count=retry_count, error_message=error, retry_due_at=due
        )
    )
