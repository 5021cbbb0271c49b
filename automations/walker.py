"""The step walker (AUT-18 … AUT-29): exactly one step per execution.

Hops, retries and delays go through `owlat.jobs.enqueue` (immediate → django-q2; future → a due-task row handed
over by `run_due_tasks`, D-05); nothing sleeps in a worker. Every function takes an injectable `now`.
The walker never branches on a step kind: it reaches the kind's module through `step_module_for`.
"""

from __future__ import annotations

import datetime as dt
import logging
from typing import Any

from django.db import transaction
from django.db.models import Q
from django.db.models.functions import Coalesce
from django.utils import timezone

from automations.lifecycle import (
    automation_record_run_failure,
    run_cancel,
    run_complete,
    step_run_claim,
    step_run_claim_retry,
    step_run_complete,
    step_run_create,
    step_run_fail,
    step_run_note_retry,
    step_runs_skip,
)
from automations.models import (
    AutomationRun,
    AutomationStatus,
    AutomationStep,
    AutomationStepRun,
    RunStatus,
    StepRunStatus,
)
from automations.steps import StepConfigError, StepContext, StepOutcome, entry_delay, step_module_for
from owlat.jobs import enqueue

logger = logging.getLogger(__name__)

MAX_STEPS_PER_RUN = 100
MAX_RETRY_ATTEMPTS = 3
RETRY_DELAYS_MS = [1000, 5000, 30000]
PENDING_DELAYS_BATCH = 200
LOST_DISPATCH_AFTER = dt.timedelta(minutes=5)

LOOP_CAP_MESSAGE = f"Automation exceeded {MAX_STEPS_PER_RUN} step executions — cancelled to prevent a loop"
RUN_OR_CONTACT_NOT_FOUND = "Automation run or contact not found"
NOT_ACTIVE = "Automation is no longer active"
STEP_NOT_FOUND = "Step not found"

EXECUTE_TASK = "automations.tasks.automation_step_execute_task"
PENDING_DELAYS_TASK = "automations.tasks.process_pending_delays_task"

_TERMINAL = (StepRunStatus.COMPLETED, StepRunStatus.FAILED, StepRunStatus.SKIPPED)


def _entry_delay(step: AutomationStep) -> dt.timedelta:
    try:
        return entry_delay(step.step_type, step.config)
    except StepConfigError:
        # An invalid config is reported when the step executes (and goes through retries there).
        return dt.timedelta(0)


def _schedule_step(run: AutomationRun, step: AutomationStep, now: dt.datetime) -> AutomationStepRun:
    """Make `step` the run's current step: pending step run with `delay_until`, `execute_step` after the delay."""
    delay = _entry_delay(step)
    due = now + delay if delay > dt.timedelta(0) else None
    AutomationRun.objects.filter(pk=run.pk).update(current_step_index=step.step_index, next_step_at=due)
    step_run = step_run_create(run=run, step=step, scheduled_at=now, delay_until=due)
    enqueue(EXECUTE_TASK, str(run.pk), str(step_run.pk), 0, at=due)
    return step_run


def run_start(run_id: Any, *, now: dt.datetime | None = None) -> str:
    """AUT-18 `start_run`."""
    now = now or timezone.now()
    with transaction.atomic():
        run = (
            AutomationRun.objects.select_for_update(of=("self",))  # lock the run, not the automation row
            .select_related("automation")
            .filter(pk=run_id)
            .first()
        )
        if run is None or run.status != RunStatus.RUNNING:
            return "run not running"
        if AutomationStepRun.objects.filter(run_id=run.pk).exists():
            return "run already started"  # a duplicate delivery of this task: the run must not fork
        if run.automation.status != AutomationStatus.ACTIVE:
            run_cancel(run.pk, at=now)
            return "automation not active: run cancelled"
        step = AutomationStep.objects.filter(automation_id=run.automation_id, step_index=0).first()
        if step is None:
            run_complete(run.pk, at=now)
            return "no step 0: run completed"
        step_run = _schedule_step(run, step, now)
    return f"scheduled step run {step_run.pk}"


def _advance(
    run: AutomationRun, current: int, outcome: StepOutcome, now: dt.datetime, steps: dict[int, AutomationStep]
) -> str:
    """AUT-23, inside the caller's transaction; `steps` = the automation's steps by index."""
    nxt = outcome.next_step_index if outcome.next_step_index is not None else current + 1
    if nxt > current + 1:
        step_runs_skip(run=run, steps=[steps[i] for i in range(current + 1, nxt) if i in steps], at=now)
    if nxt >= len(steps) or nxt not in steps:
        run_complete(run.pk, at=now)
        return "run completed"
    _schedule_step(run, steps[nxt], now)
    return f"advanced to step {nxt}"


def _give_up(run: AutomationRun, step_run_id: Any, error: str, now: dt.datetime) -> None:
    with transaction.atomic():
        step_run_fail(step_run_id, at=now, error=error)
        run_cancel(run.pk, at=now)


def step_execute(
    run_id: Any, step_run_id: Any, retry_count: int = 0, *, now: dt.datetime | None = None
) -> str:
    """AUT-19 … AUT-27 `execute_step`: one step of one run. Returns a short summary."""
    now = now or timezone.now()

    # 1. Load run, contact and automation.
    step_run = AutomationStepRun.objects.filter(pk=step_run_id, run_id=run_id).first()
    if step_run is None:
        return "step run not found"
    run = AutomationRun.objects.select_related("automation", "contact").filter(pk=run_id).first()
    if run is None or run.contact is None or run.contact.deleted_at is not None:
        with transaction.atomic():
            step_run_fail(step_run_id, at=now, error=RUN_OR_CONTACT_NOT_FOUND)
            if run is not None:
                run_cancel(run.pk, at=now)
        return RUN_OR_CONTACT_NOT_FOUND
    if step_run.status in _TERMINAL:
        return "step run already finished"  # a stale duplicate: it could not have claimed anything
    automation = run.automation

    # 2. Active guard (AUT-22): no retry, no breaker count.
    if automation.status != AutomationStatus.ACTIVE:
        _give_up(run, step_run_id, NOT_ACTIVE, now)
        return "automation not active: run cancelled"

    # 3. The run's current step.
    steps = {s.step_index: s for s in AutomationStep.objects.filter(automation_id=automation.pk)}
    step = steps.get(run.current_step_index)
    if step is None:
        _give_up(run, step_run_id, STEP_NOT_FOUND, now)
        return "step not found: run cancelled"

    # 4. Claim and loop cap. A fresh dispatch claims `pending → executing` (AUT-21); a retry claims its
    # attempt on the `executing` row (compare-and-set on retry_count and attempt), so a task delivered twice
    # executes once either way.
    if retry_count == 0:
        executed = step_run_claim(step_run, at=now)
        if executed is None:
            return "not claimed"  # another dispatch owns this step run
        if executed > MAX_STEPS_PER_RUN:
            _give_up(run, step_run_id, LOOP_CAP_MESSAGE, now)
            return "loop cap: run cancelled"
    elif not step_run_claim_retry(step_run, retry_count=retry_count, at=now):
        return "retry not claimed"  # a duplicate delivery, or the step run moved on

    # 5. Execute the module; 6. on success mark completed and advance — one transaction.
    ctx = StepContext(
        organization_id=str(automation.organization_id),
        automation_id=str(automation.pk),
        run_id=str(run.pk),
        step_run_id=str(step_run_id),
        contact_id=str(run.contact_id),
        step_index=step.step_index,
        now=now,
    )
    try:
        module = step_module_for(step.step_type)
        config = module.parse_config(step.config)
        with transaction.atomic():
            outcome = module.execute(ctx, config)
            if outcome.status == "completed":
                if not step_run_complete(
                    step_run_id,
                    at=now,
                    attempt=retry_count,
                    email_send_id=outcome.email_send_id,
                    note=outcome.note,
                ):
                    # Not ours any more (failed by a guard meanwhile): undo the step's work (e.g. the queued
                    # send row) and do not advance — a run advances only on an applied completion.
                    transaction.set_rollback(True)
                    return "completion not applied: step rolled back"
                return _advance(run, step.step_index, outcome, now, steps)
    except Exception as exc:
        logger.warning("automation step %s of run %s raised: %s", step.step_index, run.pk, exc, exc_info=True)
        outcome = StepOutcome.failed(str(exc) or type(exc).__name__)
    return _retry_or_fail(run, step_run_id, retry_count, outcome.error or "Step failed", now)


def _retry_or_fail(
    run: AutomationRun, step_run_id: Any, retry_count: int, error: str, now: dt.datetime
) -> str:
    """AUT-26: retry after 1 s, 5 s, 30 s; then step failed, run cancelled, breaker +1."""
    if retry_count < MAX_RETRY_ATTEMPTS:
        with transaction.atomic():
            if not step_run_note_retry(
                step_run_id, attempt=retry_count, retry_count=retry_count + 1, error=error
            ):
                return f"failed ({error}); the step run is no longer held by this attempt"
            due = now + dt.timedelta(milliseconds=RETRY_DELAYS_MS[retry_count])
            enqueue(EXECUTE_TASK, str(run.pk), str(step_run_id), retry_count + 1, at=due)
        return f"failed ({error}); retry {retry_count + 1} scheduled"
    with transaction.atomic():
        step_run_fail(step_run_id, at=now, error=error, retry_count=retry_count)
        run_cancel(run.pk, at=now)
        automation_record_run_failure(run.automation_id, at=now)
    return f"failed ({error}); gave up: run cancelled"


def pending_delays_process(
    *, now: dt.datetime | None = None, batch: int = PENDING_DELAYS_BATCH, after: list | None = None
) -> int:
    """AUT-29 "process pending delays": re-dispatch due pending step runs; returns how many were dispatched.

    Due = `delay_until <= now` (the spec's rule). [project] Also a pending step run without a delay whose
    dispatch is older than `LOST_DISPATCH_AFTER`: its immediate task was lost (a worker died, the database
    refused a connection, django-q2 does not retry), and without this the run would wait forever.
    A full batch re-enqueues the sweep at once, continuing after the last row seen (so a backlog is walked
    once instead of re-dispatching rows the workers have not claimed yet). The claim makes a double dispatch
    harmless.
    """
    now = now or timezone.now()
    qs = (
        AutomationStepRun.objects.filter(status=StepRunStatus.PENDING)
        .filter(
            Q(delay_until__lte=now) | Q(delay_until__isnull=True, scheduled_at__lte=now - LOST_DISPATCH_AFTER)
        )
        .annotate(due=Coalesce("delay_until", "scheduled_at"))
    )
    if after:
        after_at = dt.datetime.fromisoformat(after[0])
        qs = qs.filter(Q(due__gt=after_at) | Q(due=after_at, id__gt=after[1]))
    rows = list(qs.order_by("due", "id").values_list("run_id", "id", "due")[:batch])
    with transaction.atomic():
        for run_id, step_run_id, _ in rows:
            enqueue(EXECUTE_TASK, str(run_id), str(step_run_id), 0)
        if len(rows) == batch:
            last = rows[-1]
            enqueue(PENDING_DELAYS_TASK, [last[2].isoformat(), str(last[1])])
    return len(rows)
