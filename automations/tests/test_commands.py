"""Management commands: automation_transition, process_pending_delays, backfill_automation_stats."""

from __future__ import annotations

import datetime as dt
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.utils import timezone

from automations.counters import counters_rollup
from automations.models import Automation, AutomationStep
from automations.tests.conftest import DELAY_1H
from automations.triggers import automation_fanout
from owlat.models import AuditLog, DueTask
from owlat.registry import TriggerEvent
from testsupport import drain_queue, queued_tasks


def run(*args):
    out = StringIO()
    call_command(*args, stdout=out)
    return out.getvalue()


def test_transition_with_actor_tag(make_automation):
    automation = make_automation([DELAY_1H])
    out = run("automation_transition", str(automation.pk), "activate", "--actor", "system:ops-alice")
    assert "draft → active: transitioned" in out
    automation.refresh_from_db()
    assert automation.status == "active"
    audit = AuditLog.objects.get(resource_id=str(automation.pk), action="automation.activated")
    assert audit.user_id == "system:ops-alice"


def test_transition_dry_run_changes_nothing(make_automation):
    automation = make_automation([DELAY_1H], status="active")
    out = run("automation_transition", str(automation.pk), "pause", "--dry-run")
    assert out.startswith("[dry run] active → paused: transitioned")
    automation.refresh_from_db()
    assert automation.status == "active"
    assert not AuditLog.objects.filter(resource_id=str(automation.pk), action="automation.paused").exists()


def test_transition_refusal_is_a_command_error(make_automation):
    automation = make_automation([DELAY_1H], status="active")
    with pytest.raises(CommandError, match="Automation is not in a state that allows this transition"):
        run("automation_transition", str(automation.pk), "revert-to-draft")
    with pytest.raises(CommandError, match="Automation not found"):
        run("automation_transition", "00000000-0000-0000-0000-000000000000", "pause")


def test_process_pending_delays_once(make_automation, contact):
    automation = make_automation([("delay", {"duration": 1, "unit": "minutes"})], status="active")
    automation_fanout(TriggerEvent("contact_created", str(automation.organization_id), str(contact.pk)))
    drain_queue()
    DueTask.objects.all().delete()  # the delayed dispatch got lost
    from automations.models import AutomationStepRun

    AutomationStepRun.objects.update(delay_until=timezone.now() - dt.timedelta(seconds=1))
    assert run("process_pending_delays").strip() == "dispatched 1 pending step runs"
    assert [t.func for t in queued_tasks()] == ["automations.tasks.automation_step_execute_task"]


def test_backfill_is_a_dry_run_unless_apply(make_automation, make_contact):
    automation = make_automation(
        [
            (
                "condition",
                {
                    "condition": {"kind": "email_activity", "field": "opened", "operator": "is_true"},
                    "yesBranchStepIndex": None,
                    "noBranchStepIndex": 2,
                },
            ),
            DELAY_1H,
            DELAY_1H,
        ],
        status="active",
    )
    for _ in range(3):
        c = make_contact()
        automation_fanout(TriggerEvent("contact_created", str(automation.organization_id), str(c.pk)))
    drain_queue()
    make_automation([DELAY_1H])  # untouched
    counters_rollup()  # every delta folded (issue 12 item 2); then
    # counters drift (e.g. restored from an old backup)
    Automation.objects.filter(pk=automation.pk).update(stats_entered=0, stats_completed=9)
    AutomationStep.objects.filter(automation=automation).update(stat_skipped=0, stat_pending=5)

    out = run("backfill_automation_stats", "--batch-size", "1")
    assert (
        "Summary (dry run (use --apply to write)): 2 automations checked; 1 with wrong run counters; 3 steps"
        in out
    )
    assert out.count("automations checked,") == 2  # progress per batch
    automation.refresh_from_db()
    assert automation.stats_entered == 0

    out = run("backfill_automation_stats", "--apply")
    assert "Summary (applied)" in out
    automation.refresh_from_db()
    assert (automation.stats_entered, automation.stats_completed, automation.stats_cancelled) == (3, 0, 0)
    steps = {s.step_index: s for s in automation.steps.all()}
    assert (steps[0].stat_completed, steps[1].stat_skipped, steps[2].stat_pending) == (3, 3, 3)
    out = run("backfill_automation_stats")
    assert "0 with wrong run counters; 0 steps" in out
