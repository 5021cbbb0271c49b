"""The contact timeline's automation rows (`owlat.timeline`): each run and each step run of the contact."""

from __future__ import annotations

from automations.models import AutomationRun, AutomationStepRun
from owlat.models import Contact
from owlat.timeline import TimelineRow, admin_link, links, newest


def run_rows(contact: Contact, limit: int) -> list[TimelineRow]:
    """Runs of the contact with their automation and status (one query)."""
    qs = AutomationRun.objects.filter(
        organization_id=contact.organization_id, contact=contact
    ).select_related("automation")
    rows = []
    for run in newest(qs, "started_at")[:limit]:
        ended = f", ended {run.completed_at:%Y-%m-%d %H:%M}" if run.completed_at else ""
        rows.append(
            TimelineRow(
                when=run.started_at,
                kind="automation",
                title=f"Entered automation “{run.automation.name}”",
                detail=f"trigger: {run.triggered_by.replace('_', ' ')} · {run.steps_executed} step(s) run",
                outcome=f"{run.status}{ended}",
                links=links(
                    admin_link("run", "admin:automations_automationrun_change", run.pk),
                    admin_link("automation", "admin:automations_automation_change", run.automation_id),
                ),
            )
        )
    return rows


def step_run_rows(contact: Contact, limit: int) -> list[TimelineRow]:
    """Step runs of the contact's runs: the step, its status and why it failed or did nothing (one query)."""
    qs = AutomationStepRun.objects.filter(
        organization_id=contact.organization_id, run__contact=contact
    ).select_related("run__automation")
    rows = []
    for step in newest(qs, "scheduled_at")[:limit]:
        why = step.error_message or step.note or ""
        waits = f"waits until {step.delay_until:%Y-%m-%d %H:%M}" if step.delay_until else ""
        rows.append(
            TimelineRow(
                when=step.scheduled_at,
                kind="step",
                title=f"Step {step.step_index + 1} ({step.step_type}) of “{step.run.automation.name}”",
                detail=" · ".join(part for part in (waits, why[:200]) if part),
                outcome=f"{step.status}"
                + (f" after {step.retry_count} retry(ies)" if step.retry_count else ""),
                links=links(admin_link("run", "admin:automations_automationrun_change", step.run_id)),
            )
        )
    return rows
