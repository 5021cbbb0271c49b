"""Reads for the funnel (AUT-35) and the counter backfill (AUT-05, AUT-02)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.db.models import Count, Q
from django.utils import timezone

from automations.counters import counters_rollup
from automations.models import Automation, AutomationRun, AutomationStep, RunStatus, StepRunStatus

# --- reads and backfill (AUT-05, AUT-35) ------------------------------------------------------------------------


def automation_funnel(automation: Automation) -> list[dict[str, Any]]:
    """Per step: the stored counters plus the pending deltas (exact between roll-ups)."""
    from automations.counters import counters_overlay

    steps = list(AutomationStep.objects.filter(automation=automation).order_by("step_index"))
    counters_overlay(steps=steps)
    return [
        {
            "stepId": str(s.pk),
            "stepIndex": s.step_index,
            "stepType": s.step_type,
            "pending": s.stat_pending,
            "executing": s.stat_executing,
            "completed": s.stat_completed,
            "failed": s.stat_failed,
            "skipped": s.stat_skipped,
        }
        for s in steps
    ]


@dataclass
class BackfillReport:
    automations: int = 0
    changed: int = 0
    steps_changed: int = 0
    last_id: str | None = None


def automation_stats_backfill(
    *,
    apply: bool,
    batch_size: int = 100,
    after: str | None = None,
    progress: Callable[[str], None] | None = None,
) -> BackfillReport:
    """Recompute the run counters (AUT-05) and per-step counters (AUT-02) from the rows, in pk batches.

    A dry run (default) only reports what would change. `after` resumes after an automation id.
    """
    report = BackfillReport()
    cursor = after
    while True:
        qs = Automation.objects.order_by("pk")
        if cursor:
            qs = qs.filter(pk__gt=cursor)
        batch = list(qs[:batch_size])
        if not batch:
            break
        counters_rollup(automation_ids=[a.pk for a in batch])  # compare rows with folded counters
        for automation in Automation.objects.filter(pk__in=[a.pk for a in batch]).order_by("pk"):
            report.automations += 1
            counts = AutomationRun.objects.filter(automation=automation).aggregate(
                entered=Count("pk"),
                completed=Count("pk", filter=Q(status=RunStatus.COMPLETED)),
                cancelled=Count("pk", filter=Q(status=RunStatus.CANCELLED)),
            )
            wanted = {
                "stats_entered": counts["entered"],
                "stats_completed": counts["completed"],
                "stats_cancelled": counts["cancelled"],
            }
            if any(getattr(automation, k) != v for k, v in wanted.items()):
                report.changed += 1
                if apply:
                    Automation.objects.filter(pk=automation.pk).update(
                        **wanted, stats_updated_at=timezone.now()
                    )
            for step in AutomationStep.objects.filter(automation=automation):
                per = dict(step.step_runs.values("status").annotate(n=Count("pk")).values_list("status", "n"))
                wanted_step = {f"stat_{s}": per.get(s, 0) for s in StepRunStatus.values}
                if any(getattr(step, k) != v for k, v in wanted_step.items()):
                    report.steps_changed += 1
                    if apply:
                        AutomationStep.objects.filter(pk=step.pk).update(**wanted_step)
            cursor = str(automation.pk)
            report.last_id = cursor
        if progress:
            progress(
                f"{report.automations} automations checked, {report.changed} with run counters and "
                f"{report.steps_changed} steps with step counters {'fixed' if apply else 'to fix'}"
            )
    return report
