"""Step runs a dead worker or a lost task left `executing` (found by tests/faults). Run as a sweep of the due-task
dispatcher (owlat.registry.register_sweep), outside the queues.

Abandoned attempts. A step run is claimed `pending → executing` in a transaction of its own; its effects and
its completion then commit together. A worker killed in between leaves the step run `executing` with nothing
done, and nothing would ever take it again. No task runs longer than django-q2's `timeout`, so a step run held
by its attempt (`attempt == retry_count`, no retry scheduled) whose attempt began (the claim, or for a retry
no earlier than its due time) longer ago than that plus a margin is such a leftover: it counts as a failed
attempt and goes through the AUT-26 retries (`_retry_or_fail`: 1 s, 5 s, 30 s, then failed). Its effects were
rolled back with the worker, so executing it again sends nothing twice; a retry that races a still-running
attempt is refused by the attempt compare-and-set.

Lost retries. A scheduled retry (`retry_count > attempt`) is a due-task row until it is due; the dispatcher
then hands it to django-q2 and deletes the row. With the Redis broker a task a worker or a cluster took and
then lost (SIGKILL: django-q2's Redis list has no acknowledgement and no redelivery) is gone, and the step run
would wait for its retry for ever. A retry not taken `executing_lease()` after it was due (`retry_due_at`) is
handed to the queue again, and `retry_due_at` moves to now — its lease: while a queue is stuck the sweep hands
it out once per lease, not once per sweep. The retry's claim (compare-and-set on `retry_count` and `attempt`)
lets exactly one delivery execute it, should the first task turn up after all.

Pending step runs whose task was lost (a delay that came due, an immediate dispatch) are AUT-29's:
`walker.pending_delays_process`, the "process pending delays" schedule.
"""

from __future__ import annotations

import datetime as dt

from django.conf import settings
from django.db import connection, transaction
from django.db.models import F, Q
from django.utils import timezone

from automations.models import AutomationStepRun, StepRunStatus

WORKER_LOST = "The worker executing this step stopped before it finished"
MARGIN_SECONDS = 10


def executing_lease() -> dt.timedelta:
    return dt.timedelta(seconds=int(settings.Q_CLUSTER.get("timeout") or 120) + MARGIN_SECONDS)


def abandoned_step_runs_recover(*, now: dt.datetime | None = None, limit: int = 500) -> int:
    """Retry (or fail) the step runs abandoned by a dead worker; returns how many were handled."""
    from automations.walker import _retry_or_fail

    now = now or timezone.now()
    cutoff = now - executing_lease()
    rows = list(
        AutomationStepRun.objects.filter(
            status=StepRunStatus.EXECUTING, attempt=F("retry_count"), started_at__lt=cutoff
        )
        .filter(Q(retry_due_at__isnull=True) | Q(retry_due_at__lt=cutoff))
        .select_related("run")
        .order_by("started_at")[:limit]
    )
    for step_run in rows:
        _retry_or_fail(step_run.run, step_run.pk, step_run.attempt, WORKER_LOST, now)
    return len(rows)


def lost_retries_redrive(*, now: dt.datetime | None = None, limit: int = 500) -> int:
    """Hand the retries whose task was lost to the queue again, each once per lease; returns how many."""
    from automations.walker import EXECUTE_TASK
    from owlat.jobs import enqueue

    now = now or timezone.now()
    cutoff = now - executing_lease()
    with transaction.atomic():
        qs = AutomationStepRun.objects.filter(
            status=StepRunStatus.EXECUTING, retry_count__gt=F("attempt")
        ).filter(Q(retry_due_at__lt=cutoff) | Q(retry_due_at__isnull=True, started_at__lt=cutoff))
        if connection.features.has_select_for_update_skip_locked:
            qs = qs.select_for_update(skip_locked=True)  # a sweep on another host skips them
        rows = list(qs.order_by("started_at").values_list("pk", "run_id", "retry_count")[:limit])
        AutomationStepRun.objects.filter(pk__in=[pk for pk, _, _ in rows]).update(retry_due_at=now)
        for pk, run_id, retry_count in rows:
            enqueue(EXECUTE_TASK, str(run_id), str(pk), retry_count)
    return len(rows)


def abandoned_step_runs_sweep() -> str:
    return f"abandoned step runs {abandoned_step_runs_recover()}, lost retries {lost_retries_redrive()}"
