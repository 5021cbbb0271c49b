"""The automations' part of the admin dashboard (owlat.admin.dashboard registries, filled in `ready()`):
automations paused by the failure breaker (AUT-27) and the funnels of the busiest active automations (AUT-35),
both read from the counters the engine keeps."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from django.urls import reverse

from automations.lifecycle import AUTOMATION_FAILURE_BREAKER_THRESHOLD
from automations.models import Automation, AutomationStatus, AutomationStep
from owlat.admin.dashboard import AttentionItem, Funnel

FUNNELS_SHOWN = 3


def _automations(organization_id: Any) -> Any:
    qs = Automation.objects.all()
    return qs if organization_id is None else qs.filter(organization_id=organization_id)


def breaker_paused_automations(organization_id: Any) -> Iterator[AttentionItem]:
    paused = list(
        _automations(organization_id)
        .filter(
            status=AutomationStatus.PAUSED, consecutive_run_failures__gte=AUTOMATION_FAILURE_BREAKER_THRESHOLD
        )
        .order_by("-paused_at")
        .values_list("pk", "name")[:6]
    )
    for pk, name in paused[:5]:
        yield AttentionItem(
            f"Automation “{name}” was paused by the failure breaker",
            link=reverse("admin:automations_automation_change", args=[pk]),
            severity="danger",
            detail=f"{AUTOMATION_FAILURE_BREAKER_THRESHOLD} runs in a row failed; fix the cause, then resume it.",
        )
    if len(paused) > 5:
        yield AttentionItem(
            "More automations were paused by the failure breaker",
            link=reverse("admin:automations_automation_changelist") + "?status__exact=paused",
            severity="danger",
        )


def automation_funnels(organization_id: Any) -> list[Funnel]:
    """Entered, then completed per step, of the active automations with the most entries (the pending counter
    deltas folded first)."""
    from automations.counters import counters_rollup

    counters_rollup()
    top = list(
        _automations(organization_id)
        .filter(status=AutomationStatus.ACTIVE, stats_entered__gt=0)
        .order_by("-stats_entered")
        .values_list("pk", "name", "stats_entered")[:FUNNELS_SHOWN]
    )
    steps: dict[Any, list[tuple[int, str, int]]] = {}
    for automation_id, index, step_type, completed in (
        AutomationStep.objects.filter(automation_id__in=[pk for pk, _n, _e in top])
        .order_by("step_index")
        .values_list("automation_id", "step_index", "step_type", "stat_completed")
    ):
        steps.setdefault(automation_id, []).append((index, step_type, completed))
    return [
        Funnel(
            name=name,
            link=reverse("admin:automations_automation_change", args=[pk]),
            steps=[("Entered", entered)]
            + [
                (f"{index + 1}. {step_type.capitalize()}", completed)
                for index, step_type, completed in steps.get(pk, [])
            ],
        )
        for pk, name, entered in top
    ]
