"""AUT-18 … AUT-29: the walker — one step per execution, claim, guard, advancing, delays, retries, breaker,
completion, cancellation and the lost-delay cron. Email-step stories live in test_walker_email.py."""

from __future__ import annotations

import datetime as dt

from django.utils import timezone

from automations.counters import counters_rollup
from automations.lifecycle import automation_transition
from automations.models import Automation, AutomationRun, AutomationStep, AutomationStepRun
from automations.tests.conftest import DELAY_1H
from automations.walker import (
    LOOP_CAP_MESSAGE,
    pending_delays_process,
    run_start,
    step_execute,
)
from owlat.models import DueTask, Topic
from owlat.registry import TriggerEvent
from testsupport import clear_queue, drain_queue, queued_tasks

EXECUTE = "automations.tasks.automation_step_execute_task"
WALK = "automations.tasks.automation_walk_task"
BAD_CONDITION = ("condition", {"condition": {"kind": "no_such_kind"}})


def yes_no(cond, yes, no):
    return ("condition", {"condition": cond, "yesBranchStepIndex": yes, "noBranchStepIndex": no})


PLAN_IS_PRO = {"kind": "contact_property", "field": "plan", "operator": "equals", "value": "pro"}


def enter(automation, contact):
    from automations.triggers import automation_fanout

    [run_id] = automation_fanout(
        TriggerEvent(automation.trigger_type, str(automation.organization_id), str(contact.pk))
    )
    return AutomationRun.objects.get(pk=run_id)


def step_runs(run):
    return list(AutomationStepRun.objects.filter(run=run).order_by("scheduled_at", "step_index"))


def due_rows(func=EXECUTE):
    return list(DueTask.objects.filter(func=func).order_by("due_at"))


def fast_forward():
    """Make every due-task row due now (what time would do) so drain_queue hands it over."""
    DueTask.objects.update(due_at=timezone.now() - dt.timedelta(seconds=1))


def funnel(automation):
    counters_rollup()  # the counters move as deltas (issue 12 item 2)
    return {
        s.step_index: (s.stat_pending, s.stat_executing, s.stat_completed, s.stat_failed, s.stat_skipped)
        for s in AutomationStep.objects.filter(automation=automation)
    }


# --- start of a run (AUT-18) -------------------------------------------------------------------------------


def opened(automation, contact):
    """A run opened but not started (what the start task still handles: a run without step 0 at fan-out)."""
    from automations.lifecycle import run_open

    return run_open(
        automation=automation,
        contact_id=contact.pk,
        triggered_by="contact_created",
        trigger_data=None,
        at=timezone.now(),
    )


def test_start_schedules_step_zero_after_its_entry_delay(make_automation, contact):
    # the fan-out starts the run in its own transaction (issue 12 item 3: no start hop)
    from automations.triggers import automation_fanout

    automation = make_automation([DELAY_1H, yes_no(PLAN_IS_PRO, None, None)], status="active")
    now = timezone.now()
    [run_id] = automation_fanout(
        TriggerEvent(automation.trigger_type, str(automation.organization_id), str(contact.pk)), now=now
    )
    run = AutomationRun.objects.get(pk=run_id)
    assert run_start(run.pk, now=now) == "run already started"  # a start task for it changes nothing

    [sr] = step_runs(run)
    due = now + dt.timedelta(hours=1)
    assert (sr.status, sr.step_index, sr.step_type, sr.delay_until) == ("pending", 0, "delay", due)
    run.refresh_from_db()
    assert run.next_step_at == due
    [row] = due_rows()
    assert (row.due_at, row.args) == (due, [str(run.pk), str(sr.pk), 0])
    assert funnel(automation)[0] == (1, 0, 0, 0, 0)


def test_start_without_delay_dispatches_at_once(make_automation, contact):
    automation = make_automation([yes_no(PLAN_IS_PRO, None, None)], status="active")
    run = enter(automation, contact)
    [sr] = step_runs(run)
    assert sr.delay_until is None
    # one hop for the batched walker (issue 12 item 1), no per-step task
    assert [t.args for t in queued_tasks() if t.func == WALK] == [()]
    assert [t for t in queued_tasks() if t.func == EXECUTE] == []
    assert due_rows() == []


def test_start_cancels_when_the_automation_is_no_longer_active(make_automation, contact):
    automation = make_automation([DELAY_1H], status="active")
    run = opened(automation, contact)
    automation_transition(automation_id=automation.pk, to="paused", actor="u")
    run_start(run.pk)
    run.refresh_from_db()
    assert run.status == "cancelled" and run.completed_at is not None
    assert step_runs(run) == []
    counters_rollup()  # counters move as deltas (issue 12 item 2)
    automation.refresh_from_db()
    assert (automation.stats_cancelled, automation.stats_active) == (1, 0)


def test_start_completes_when_there_is_no_step_zero(make_automation, contact):
    automation = make_automation([DELAY_1H], status="active")
    run = opened(automation, contact)
    AutomationStep.objects.filter(automation=automation).update(step_index=3)
    run_start(run.pk)
    run.refresh_from_db()
    assert run.status == "completed"


# --- a whole run through the queue ---------------------------------------------------------------------------


def test_delay_then_condition_walks_to_completion_with_the_yes_branch(make_automation, contact):
    from owlat.contacts import contact_set_properties

    # Given a contact with plan = "Pro" and the condition plan equals "pro" (AUT-34 example)
    contact_set_properties(contact=contact, properties={"plan": "Pro"})
    automation = make_automation([DELAY_1H, yes_no(PLAN_IS_PRO, 3, 2), DELAY_1H, DELAY_1H], status="active")
    run = enter(automation, contact)
    drain_queue()
    run.refresh_from_db()
    assert run.status == "running" and run.current_step_index == 0
    fast_forward()
    drain_queue()
    # the yes branch (3) skips step 2 and waits on step 3
    run.refresh_from_db()
    assert run.current_step_index == 3
    assert [(s.step_index, s.status) for s in step_runs(run)] == [
        (0, "completed"),
        (1, "completed"),
        (2, "skipped"),
        (3, "pending"),
    ]
    fast_forward()
    drain_queue()
    run.refresh_from_db()
    assert (run.status, run.steps_executed, run.next_step_at) == ("completed", 3, None)
    assert funnel(automation) == {
        0: (0, 0, 1, 0, 0),
        1: (0, 0, 1, 0, 0),
        2: (0, 0, 0, 0, 1),
        3: (0, 0, 1, 0, 0),
    }
    counters_rollup()  # counters move as deltas (issue 12 item 2)
    automation.refresh_from_db()
    assert (automation.stats_entered, automation.stats_completed, automation.stats_active) == (1, 1, 0)


def test_condition_no_branch_and_null_branch_fall_through(make_automation, contact):
    automation = make_automation([yes_no(PLAN_IS_PRO, None, None), DELAY_1H], status="active")
    run = enter(automation, contact)
    drain_queue()
    run.refresh_from_db()
    assert run.current_step_index == 1  # null → current + 1
    assert [s.status for s in step_runs(run)] == ["completed", "pending"]


def test_backward_branch_skips_nothing(make_automation, contact):
    topic = Topic.objects.create(organization=contact.organization, name="T")
    is_member = {"kind": "topic_membership", "topicId": str(topic.pk), "operator": "equals"}
    automation = make_automation([DELAY_1H, yes_no(is_member, 3, 0), DELAY_1H, DELAY_1H], status="active")
    run = enter(automation, contact)
    drain_queue()
    fast_forward()
    drain_queue()
    run.refresh_from_db()
    assert run.current_step_index == 0
    assert [(s.step_index, s.status) for s in step_runs(run)] == [
        (0, "completed"),
        (1, "completed"),
        (0, "pending"),
    ]


def test_branch_past_the_last_step_completes_the_run(make_automation, contact):
    automation = make_automation([yes_no(PLAN_IS_PRO, 9, 9), DELAY_1H], status="active")
    run = enter(automation, contact)
    drain_queue()
    run.refresh_from_db()
    assert run.status == "completed"
    assert [(s.step_index, s.status) for s in step_runs(run)] == [(0, "completed"), (1, "skipped")]


# --- claim (AUT-21) ------------------------------------------------------------------------------------------


def test_two_dispatches_of_the_same_pending_step_execute_it_once(make_automation, contact):
    automation = make_automation([DELAY_1H, DELAY_1H], status="active")
    run = enter(automation, contact)
    run_start(run.pk)
    [sr] = step_runs(run)
    assert step_execute(run.pk, sr.pk) == "advanced to step 1"
    second = step_execute(run.pk, sr.pk)
    assert second in ("not claimed", "step run already finished")
    run.refresh_from_db()
    assert run.steps_executed == 1
    assert [(s.step_index, s.status) for s in step_runs(run)] == [(0, "completed"), (1, "pending")]


# --- active guard and pausing (AUT-22, AUT-14) ---------------------------------------------------------------


def test_pausing_mid_run_cancels_the_run_at_its_next_step(make_automation, contact):
    automation = make_automation([DELAY_1H, DELAY_1H], status="active")
    run = enter(automation, contact)
    drain_queue()
    # When the automation is paused while the run waits on its first step
    automation_transition(automation_id=automation.pk, to="paused", actor="u")
    run.refresh_from_db()
    assert run.status == "running"  # pausing does not touch in-flight runs
    fast_forward()
    drain_queue()
    # then the step that comes due fails and the run is cancelled, without retry or breaker count
    run.refresh_from_db()
    [sr] = step_runs(run)
    assert (sr.status, sr.error_message) == ("failed", "Automation is no longer active")
    assert run.status == "cancelled"
    counters_rollup()  # counters move as deltas (issue 12 item 2)
    automation.refresh_from_db()
    assert (automation.consecutive_run_failures, automation.stats_cancelled, automation.stats_active) == (
        0,
        1,
        0,
    )
    assert due_rows() == []
    # resuming does not revive the cancelled run
    automation_transition(automation_id=automation.pk, to="active", actor="u")
    run.refresh_from_db()
    assert run.status == "cancelled"


def test_step_not_found_fails_the_step_and_cancels_the_run(make_automation, contact):
    automation = make_automation([DELAY_1H], status="active")
    run = enter(automation, contact)
    run_start(run.pk)
    [sr] = step_runs(run)
    AutomationStep.objects.filter(automation=automation).delete()
    step_execute(run.pk, sr.pk)
    sr.refresh_from_db()
    run.refresh_from_db()
    assert (sr.status, sr.error_message, run.status) == ("failed", "Step not found", "cancelled")


def test_deleted_contact_fails_the_step_with_run_or_contact_not_found(make_automation, contact):
    automation = make_automation([DELAY_1H], status="active")
    run = enter(automation, contact)
    run_start(run.pk)
    [sr] = step_runs(run)
    from owlat.models import Contact

    Contact.objects.filter(pk=contact.pk).update(deleted_at=timezone.now())
    step_execute(run.pk, sr.pk)
    sr.refresh_from_db()
    run.refresh_from_db()
    assert (sr.status, sr.error_message) == ("failed", "Automation run or contact not found")
    assert run.status == "cancelled"


# --- retries (AUT-26) and breaker (AUT-27) ------------------------------------------------------------------


def test_retries_wait_1s_5s_30s_then_fail_the_step_and_cancel_the_run(make_automation, contact):
    automation = make_automation([BAD_CONDITION], status="active")
    run = enter(automation, contact)
    t0 = timezone.now()
    run_start(run.pk, now=t0)
    [sr] = step_runs(run)

    now = t0
    for attempt, wait in enumerate([1, 5, 30]):
        step_execute(run.pk, sr.pk, attempt, now=now)
        sr.refresh_from_db()
        assert sr.status == "executing"  # stays executing while retries are pending
        assert sr.retry_count == attempt + 1
        assert "no_such_kind" in sr.error_message
        [row] = due_rows()
        assert row.due_at == now + dt.timedelta(seconds=wait)
        assert row.args == [str(run.pk), str(sr.pk), attempt + 1]
        row.delete()  # handed over (by the dispatcher in production)
        now = row.due_at

    # the third retry fails: give up
    step_execute(run.pk, sr.pk, 3, now=now)
    sr.refresh_from_db()
    run.refresh_from_db()
    assert (sr.status, sr.retry_count, sr.completed_at) == ("failed", 3, now)
    assert "no_such_kind" in sr.error_message
    assert run.status == "cancelled"
    assert due_rows() == []
    automation.refresh_from_db()
    assert automation.consecutive_run_failures == 1
    assert funnel(automation)[0] == (0, 0, 0, 1, 0)


def test_a_duplicate_retry_of_a_finished_step_run_does_nothing(make_automation, contact):
    automation = make_automation([BAD_CONDITION], status="active")
    run = enter(automation, contact)
    run_start(run.pk)
    [sr] = step_runs(run)
    for attempt in range(4):
        step_execute(run.pk, sr.pk, attempt)
    assert step_execute(run.pk, sr.pk, 3) == "step run already finished"
    automation.refresh_from_db()
    assert automation.consecutive_run_failures == 1


def _fail_one_run(automation, contact):
    run = enter(automation, contact)
    run_start(run.pk)
    [sr] = step_runs(run)
    for attempt in range(4):
        step_execute(run.pk, sr.pk, attempt)
    run.refresh_from_db()
    assert run.status == "cancelled"


def test_breaker_pauses_after_exactly_five_consecutive_failed_runs(make_automation, make_contact):
    automation = make_automation([BAD_CONDITION], status="active")
    for i in range(4):
        _fail_one_run(automation, make_contact())
        automation.refresh_from_db()
        assert (automation.status, automation.consecutive_run_failures) == ("active", i + 1)
    _fail_one_run(automation, make_contact())
    automation.refresh_from_db()
    assert (automation.status, automation.consecutive_run_failures) == ("paused", 5)
    # resuming resets the counter (every → active)
    automation_transition(automation_id=automation.pk, to="active", actor="u")
    automation.refresh_from_db()
    assert automation.consecutive_run_failures == 0


def test_a_completed_run_resets_the_breaker_counter(make_automation, make_contact):
    automation = make_automation([BAD_CONDITION], status="active")
    for _ in range(4):
        _fail_one_run(automation, make_contact())
    # fix the step: the next run completes
    AutomationStep.objects.filter(automation=automation).update(
        config={"condition": PLAN_IS_PRO, "yesBranchStepIndex": None, "noBranchStepIndex": None}
    )
    run = enter(automation, make_contact())
    drain_queue()
    run.refresh_from_db()
    assert run.status == "completed"
    automation.refresh_from_db()
    assert automation.consecutive_run_failures == 0
    # four more failures do not trip the breaker
    AutomationStep.objects.filter(automation=automation).update(config=BAD_CONDITION[1])
    for _ in range(4):
        _fail_one_run(automation, make_contact())
    automation.refresh_from_db()
    assert (automation.status, automation.consecutive_run_failures) == ("active", 4)


def test_loop_cap_on_a_self_loop_condition(make_automation, contact):
    # A condition that branches back to itself: every pass is one claim; the 101st claim fails.
    automation = make_automation([yes_no(PLAN_IS_PRO, 0, 0)], status="active")
    run = enter(automation, contact)
    drain_queue()
    run.refresh_from_db()
    assert (run.status, run.steps_executed) == ("cancelled", 101)
    last = step_runs(run)[-1]
    assert (last.status, last.error_message) == ("failed", LOOP_CAP_MESSAGE)
    assert LOOP_CAP_MESSAGE == "Automation exceeded 100 step executions — cancelled to prevent a loop"
    automation.refresh_from_db()
    assert automation.consecutive_run_failures == 0  # no breaker count
    assert funnel(automation)[0] == (0, 0, 100, 1, 0)


# --- the lost-delay cron (AUT-29) ---------------------------------------------------------------------------


def test_a_lost_delay_is_recovered_by_the_cron_exactly_once(make_automation, contact):
    automation = make_automation([DELAY_1H, ("delay", {"duration": 1, "unit": "days"})], status="active")
    run = enter(automation, contact)
    drain_queue()
    [sr] = step_runs(run)
    # Given the original scheduling was lost (the due-task row is gone)
    DueTask.objects.all().delete()
    later = timezone.now() + dt.timedelta(hours=1, seconds=1)
    assert pending_delays_process(now=timezone.now()) == 0  # not due yet
    # when the cron runs after the delay
    assert pending_delays_process(now=later) == 1
    drain_queue()
    # then the step ran once, and a second sweep finds nothing
    sr.refresh_from_db()
    assert sr.status == "completed"
    run.refresh_from_db()
    assert (run.steps_executed, run.current_step_index) == (1, 1)
    assert pending_delays_process(now=later) == 0


def test_cron_and_original_dispatch_together_execute_once(make_automation, contact):
    automation = make_automation([DELAY_1H, DELAY_1H], status="active")
    run = enter(automation, contact)
    drain_queue()
    later = timezone.now() + dt.timedelta(hours=2)
    assert pending_delays_process(now=later) == 1  # the cron's dispatch
    fast_forward()  # and the original delayed dispatch
    drain_queue()
    run.refresh_from_db()
    assert run.steps_executed == 1
    assert [s.status for s in step_runs(run)] == ["completed", "pending"]
    assert funnel(automation)[0] == (0, 0, 1, 0, 0)


def test_cron_walks_a_backlog_in_batches(make_automation, make_contact):
    automation = make_automation([DELAY_1H], status="active")
    for _ in range(5):
        enter(automation, make_contact())
    drain_queue()
    DueTask.objects.all().delete()
    later = timezone.now() + dt.timedelta(hours=2)
    assert pending_delays_process(now=later, batch=2) == 2
    follow_ups = [t for t in queued_tasks() if t.func == "automations.tasks.process_pending_delays_task"]
    assert len(follow_ups) == 1
    # the follow-up continues after the last row seen
    cursor = follow_ups[0].args[0]
    assert pending_delays_process(now=later, batch=2, after=cursor) == 2
    executes = [t for t in queued_tasks() if t.func == EXECUTE]
    assert len({t.args[1] for t in executes}) == 4


def test_counters_never_go_below_zero(make_automation, contact):
    automation = make_automation([DELAY_1H], status="active")
    run = enter(automation, contact)
    run_start(run.pk)
    AutomationStep.objects.filter(automation=automation).update(stat_pending=0)
    [sr] = step_runs(run)
    step_execute(run.pk, sr.pk)
    assert funnel(automation)[0] == (0, 0, 1, 0, 0)
    assert Automation.objects.get(pk=automation.pk).stats_active == 0


def test_a_lost_immediate_dispatch_is_recovered_after_five_minutes(make_automation, contact):
    automation = make_automation([yes_no(PLAN_IS_PRO, None, None), DELAY_1H], status="active")
    run = enter(automation, contact)
    run_start(run.pk)
    [sr] = step_runs(run)
    assert sr.delay_until is None
    # Given the immediate execute_step task was lost (e.g. the worker could not reach the database)
    clear_queue()
    now = timezone.now()
    assert pending_delays_process(now=now + dt.timedelta(minutes=4)) == 0  # not presumed lost yet
    # when the sweep runs five minutes later, it dispatches it once more
    assert pending_delays_process(now=now + dt.timedelta(minutes=5, seconds=1)) == 1
    drain_queue()
    sr.refresh_from_db()
    assert sr.status == "completed"
    run.refresh_from_db()
    assert (run.steps_executed, run.current_step_index) == (1, 1)
    # the next step waits on its delay: nothing else is due
    assert pending_delays_process(now=now + dt.timedelta(minutes=6)) == 0
