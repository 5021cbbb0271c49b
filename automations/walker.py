"""The step walker (AUT-18 … AUT-29): starting runs, executing one named step run (a delayed step that came
due, a retry, the recovery cron's dispatch), retries and the lost-delay cron. Immediate steps go to the batched
walker (`automations.walker_batch.walk`, one django-q2 hop per batch), whose executor
`execute_claimed` also runs the single step runs here.

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
    ClaimedStepRun,
    automation_record_run_failure,
    run_cancel,
    run_complete,
    step_run_claim_retry,
    step_run_create,
    step_run_fail,
    step_run_note_retry,
    step_runs_claim_due,
)
from automations.models import (
    AutomationRun,
    AutomationStatus,
    AutomationStep,
    AutomationStepRun,
    RunStatus,
    StepRunStatus,
)
from automations.steps import StepConfigError, entry_delay
from automations.walker_batch import execute_claimed, wake_walk
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
    if due is None:
        wake_walk()  # the batched walker takes it with whatever else is due
    else:
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


def step_execute(
    run_id: Any, step_run_id: Any, retry_count: int = 0, *, now: dt.datetime | None = None
) -> str:
    """AUT-19 … AUT-27 `execute_step` for one named step run (a delayed step that came due, the recovery cron,
    a retry): claimed, then executed through the batched walker's executor as a batch of one. Returns a short
    summary."""

    now = now or timezone.now()
    step_run = AutomationStepRun.objects.filter(pk=step_run_id, run_id=run_id).first()
    if step_run is None:
        return "step run not found"
    run = AutomationRun.objects.select_related("contact").filter(pk=run_id).first()
    if run is None or run.contact is None or run.contact.deleted_at is not None:
        with transaction.atomic():
            step_run_fail(step_run_id, at=now, error=RUN_OR_CONTACT_NOT_FOUND)
            if run is not None:
                run_cancel(run.pk, at=now)
        return RUN_OR_CONTACT_NOT_FOUND
    if step_run.status in _TERMINAL:
        return "step run already finished"  # a stale duplicate: it could not have claimed anything
    # A fresh dispatch claims `pending → executing` (AUT-21); a retry claims its attempt on the `executing` row
    # (compare-and-set on retry_count and attempt), so a task delivered twice executes once either way.
    if retry_count == 0:
        claimed = step_runs_claim_due(at=now, limit=1, ids=[step_run.pk])
        if not claimed:
            return "not claimed"  # another dispatch owns this step run
        item = claimed[0]
    else:
        if not step_run_claim_retry(step_run, retry_count=retry_count, at=now):
            return "retry not claimed"  # a duplicate delivery, or the step run moved on
        item = ClaimedStepRun(step_run, retry_count, None)
    return execute_claimed([item], now=now)[step_run.pk]


def _retry_or_fail(
    run: AutomationRun, step_run_id: Any, retry_count: int, error: str, now: dt.datetime
) -> str:
    """AUT-26: retry after 1 s, 5 s, 30 s; then step failed, run cancelled, breaker +1."""
    if retry_count < MAX_RETRY_ATTEMPTS:
        due = now + dt.timedelta(milliseconds=RETRY_DELAYS_MS[retry_count])
        with transaction.atomic():
            if not step_run_note_retry(
                step_run_id, attempt=retry_count, retry_count=retry_count + 1, error=error, due=due
            ):
                return f"failed ({error}); the step run is no longer held by this attempt"
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
