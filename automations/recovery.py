"""Step runs whose worker died while executing them (issue 13 item 8, found by tests/faults).

A step run is claimed `pending → executing` in a transaction of its own; its effects and its completion then
commit together. A worker killed in between leaves the step run `executing` with nothing done, and nothing
would ever take it again. No task runs longer than django-q2's `timeout`, so a step run held by its attempt
(`attempt == retry_count`, no retry scheduled) for longer than that plus a margin is such a leftover: it counts
as a failed attempt and goes through the AUT-26 retries (`_retry_or_fail`: 1 s, 5 s, 30 s, then failed). Its
effects were rolled back with the worker, so executing it again sends nothing twice; a retry that races a
still-running attempt is refused by the attempt compare-and-set. Run as a sweep of the due-task dispatcher
(owlat.registry.register_sweep), outside the queues.
"""

from __future__ import annotations

import datetime as dt

from django.conf import settings
from django.db.models import F
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
    rows = list(
        AutomationStepRun.objects.filter(
            status=StepRunStatus.EXECUTING,
            attempt=F("retry_count"),
            started_at__lt=now - executing_lease(),
        )
        .select_related("run")
        .order_by("started_at")[:limit]
    )
    for step_run in rows:
        _retry_or_fail(step_run.run, step_run.pk, step_run.attempt, WORKER_LOST, now)
    return len(rows)


def abandoned_step_runs_sweep() -> str:
    return f"abandoned step runs {abandoned_step_runs_recover()}"
