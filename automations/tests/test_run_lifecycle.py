"""Run and step-run statuses through the kernel's runners (D-04): the set-based runner (one compare-and-set
UPDATE per edge, conflicts reported, effects in bulk), rows created through the `skipped` edge, the claims
(AUT-21, refined for retries) and duplicate deliveries of walker tasks (issue 12 item 4)."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from automations.lifecycle import AutomationLifecycle, step_run_claim, step_runs_skip
from automations.lifecycle.runs import STEP_RUNS
from automations.models import Automation, AutomationRun, AutomationStep, AutomationStepRun
from automations.tests.conftest import DELAY_1H
from automations.triggers import automation_fanout
from automations.walker import run_start, step_execute
from delivery.models import TransactionalSend
from owlat.lifecycle import Move
from owlat.models import AuditLog, OrganizationSettings
from owlat.registry import TriggerEvent
from templates.models import EmailTemplate
from testsupport import drain_queue
from testsupport.race import race

pytestmark = pytest.mark.django_db


def enter(automation, contact):
    [run_id] = automation_fanout(
        TriggerEvent("contact_created", str(automation.organization_id), str(contact.pk))
    )
    return AutomationRun.objects.get(pk=run_id)


def funnel(automation):
    from automations.counters import counters_rollup

    counters_rollup()  # the counters move as deltas (issue 12 item 2)
    return {
        s.step_index: (s.stat_pending, s.stat_executing, s.stat_completed, s.stat_failed, s.stat_skipped)
        for s in AutomationStep.objects.filter(automation=automation)
    }


def pending_rows(automation, make_contact, n):
    """n runs of `automation`, each with a pending step run for step 0."""
    rows = []
    for _ in range(n):
        run = enter(automation, make_contact())  # the fan-out creates step 0's step run (issue 12 item 3)
        rows.append(AutomationStepRun.objects.get(run=run, step_index=0))
    return rows


# --- the set-based runner -------------------------------------------------------------------------------------


@pytest.mark.skipif(
    connection.vendor != "postgresql", reason="one UPDATE per edge is PostgreSQL's (SQLite: one per row)"
)
def test_transition_many_writes_one_update_per_edge_and_counts_in_bulk(make_automation, make_contact):
    automation = make_automation([DELAY_1H], status="active")
    claim, fail = pending_rows(automation, make_contact, 3), pending_rows(automation, make_contact, 2)
    moves = [Move(sr, "executing") for sr in claim] + [Move(sr, "failed", {"error": "x"}) for sr in fail]
    with CaptureQueriesContext(connection) as ctx:
        outcomes = STEP_RUNS.transition_many(moves, actor="test")
    assert [(o.ok, o.applied, o.to_state) for o in outcomes] == [(True, "transitioned", "executing")] * 3 + [
        (True, "transitioned", "failed")
    ] * 2
    updates = [q["sql"] for q in ctx.captured_queries if q["sql"].startswith("UPDATE")]
    step_runs_updates = [q for q in updates if '"automations_automationsteprun"' in q.split("SET")[0]]
    assert len(step_runs_updates) == 2  # one per edge
    assert len(updates) == 2  # the counters are not updated in place (issue 12 item 2) …
    inserts = [q["sql"] for q in ctx.captured_queries if q["sql"].startswith("INSERT")]
    assert len(inserts) == 1 and "automationcounterdelta" in inserts[0]  # … but recorded in one insert
    assert funnel(automation)[0] == (0, 3, 0, 2, 0)
    # the rows in memory reflect what was written
    assert {sr.status for sr in claim} == {"executing"} and all(sr.started_at for sr in claim)
    assert {AutomationStepRun.objects.get(pk=sr.pk).error_message for sr in fail} == {"x"}


@pytest.mark.skipif(connection.vendor != "postgresql", reason="prepared statements are PostgreSQL's")
def test_an_edges_compare_and_set_is_one_prepared_statement_whatever_the_number_of_rows(
    make_automation, make_contact
):
    automation = make_automation([DELAY_1H], status="active")
    for n in (1, 3, 2):
        outcomes = STEP_RUNS.transition_many(
            [Move(sr, "executing") for sr in pending_rows(automation, make_contact, n)], actor="test"
        )
        assert [o.applied for o in outcomes] == ["transitioned"] * n
    with connection.cursor() as cursor:
        cursor.execute("SELECT statement FROM pg_prepared_statements WHERE from_sql = false")
        ours = [
            row[0] for row in cursor.fetchall() if row[0].startswith('UPDATE "automations_automationsteprun"')
        ]
    assert (
        len(ours) == 1 and "unnest($2::uuid[]" in ours[0]
    )  # one text for 1, 3 and 2 rows, bound server-side
    assert funnel(automation)[0] == (0, 6, 0, 0, 0)


def test_a_row_moved_since_it_was_read_is_a_conflict_and_counts_nothing(make_automation, make_contact):
    automation = make_automation([DELAY_1H], status="active")
    [a, b] = pending_rows(automation, make_contact, 2)
    stale_b = AutomationStepRun.objects.get(pk=b.pk)
    STEP_RUNS.transition_many([Move(b, "failed", {"error": "first"})], actor="test")
    outcomes = STEP_RUNS.transition_many([Move(a, "executing"), Move(stale_b, "executing")], actor="test")
    assert (outcomes[0].ok, outcomes[0].applied) == (True, "transitioned")
    assert (outcomes[1].ok, outcomes[1].reason) == (False, "conflict")
    assert stale_b.status == "pending"  # not applied in memory either
    assert AutomationStepRun.objects.get(pk=b.pk).status == "failed"
    assert funnel(automation)[0] == (0, 1, 0, 1, 0)


def test_refusals_and_duplicates_are_reported_without_writes(make_automation, make_contact):
    automation = make_automation([DELAY_1H], status="active")
    [sr] = pending_rows(automation, make_contact, 1)
    [completed] = STEP_RUNS.transition_many([Move(sr, "completed")], actor="test")
    assert (completed.ok, completed.reason) == (False, "illegal_edge")
    STEP_RUNS.transition_many([Move(sr, "skipped")], actor="test")
    [again] = STEP_RUNS.transition_many([Move(sr, "skipped")], actor="test")
    assert (again.ok, again.applied) == (True, "duplicate")
    assert funnel(automation)[0] == (0, 0, 0, 0, 1)


def test_transition_many_with_lock_rereads_and_writes_audit_rows_in_one_insert(make_automation):
    first = make_automation([DELAY_1H], status="active")
    second = make_automation([DELAY_1H], status="active")
    third = make_automation([DELAY_1H], status="paused")
    stale = Automation.objects.get(pk=first.pk)
    AutomationLifecycle().transition(first.pk, "paused", actor="u")
    AuditLog.objects.all().delete()
    with CaptureQueriesContext(connection) as ctx:
        outcomes = AutomationLifecycle().transition_many(
            [Move(stale, "paused"), Move(second, "paused"), Move(third, "draft")], actor="u", lock=True
        )
    # the stale row was re-read under the lock: already paused → a recorded self-loop, not a conflict
    assert [(o.ok, o.applied) for o in outcomes] == [(True, "recorded"), (True, "transitioned")] * 1 + [
        (True, "transitioned")
    ]
    inserts = [q for q in ctx.captured_queries if q["sql"].startswith('INSERT INTO "owlat_auditlog"')]
    assert len(inserts) == 1
    assert sorted(AuditLog.objects.values_list("action", flat=True)) == [
        "automation.paused",
        "automation.paused",
        "automation.reverted_to_draft",
    ]
    assert Automation.objects.get(pk=third.pk).status == "draft"


def test_skipped_rows_are_created_through_the_declared_edge(make_automation, contact):
    automation = make_automation([DELAY_1H, DELAY_1H, DELAY_1H], status="active")
    run = enter(automation, contact)
    steps = list(AutomationStep.objects.filter(automation=automation, step_index__gte=1))
    rows = step_runs_skip(run=run, steps=steps, at=timezone.now())
    assert {(r.step_index, r.status) for r in AutomationStepRun.objects.filter(run=run)} == {
        (0, "pending"),  # step 0, started by the fan-out (issue 12 item 3)
        (1, "skipped"),
        (2, "skipped"),
    }
    assert all(r.completed_at for r in rows)
    assert funnel(automation) == {0: (1, 0, 0, 0, 0), 1: (0, 0, 0, 0, 1), 2: (0, 0, 0, 0, 1)}


# --- claims (AUT-21) and duplicate deliveries (issue 12 item 4) --------------------------------------------------


def test_a_stale_read_cannot_claim(make_automation, contact):
    automation = make_automation([DELAY_1H], status="active")
    run = enter(automation, contact)
    run_start(run.pk)
    sr = AutomationStepRun.objects.get(run=run)
    twin = AutomationStepRun.objects.get(pk=sr.pk)
    assert step_run_claim(sr, at=timezone.now()) == 1
    assert step_run_claim(twin, at=timezone.now()) is None
    run.refresh_from_db()
    assert run.steps_executed == 1


def test_run_start_delivered_twice_does_not_fork_the_run(make_automation, contact):
    automation = make_automation([DELAY_1H], status="active")
    run = enter(automation, contact)
    run_start(run.pk)
    assert run_start(run.pk) == "run already started"
    assert AutomationStepRun.objects.filter(run=run).count() == 1
    assert funnel(automation)[0] == (1, 0, 0, 0, 0)


@pytest.fixture
def failing_email(settings, org, make_automation):
    """An email step whose first attempt fails (no default sender); the retries find the sender again."""
    settings.EMAIL_PROVIDER = "local"
    template = EmailTemplate.objects.create(
        organization=org, name="W", subject="Hi", html_content="<p>Hi</p>", type="automation"
    )
    automation = make_automation([("email", {"emailTemplateId": str(template.pk)})], status="active")
    OrganizationSettings.objects.filter(organization=org).update(default_from_email="")
    return automation


def test_a_retry_delivered_twice_sends_once_and_does_not_fork(failing_email, contact, org):
    automation = failing_email
    run = enter(automation, contact)
    run_start(run.pk)
    sr = AutomationStepRun.objects.get(run=run)
    assert "retry 1 scheduled" in step_execute(run.pk, sr.pk, 0)
    OrganizationSettings.objects.filter(organization=org).update(default_from_email="hello@acme.test")
    # retry 1 arrives twice (Redis redelivery, a crashed worker's task run again)
    assert step_execute(run.pk, sr.pk, 1) == "run completed"
    assert step_execute(run.pk, sr.pk, 1) in ("retry not claimed", "step run already finished")
    # and a late duplicate of the first dispatch claims nothing either
    assert step_execute(run.pk, sr.pk, 0) in ("not claimed", "step run already finished")
    assert TransactionalSend.objects.filter(automation_id=automation.pk).count() == 1
    sr.refresh_from_db()
    run.refresh_from_db()
    assert (sr.status, sr.retry_count, sr.attempt) == ("completed", 1, 1)
    assert (run.status, run.steps_executed) == ("completed", 1)
    assert funnel(automation)[0] == (0, 0, 1, 0, 0)


def test_a_retry_delivered_twice_while_failing_schedules_one_next_retry(failing_email, contact):
    from owlat.models import DueTask

    run = enter(failing_email, contact)
    run_start(run.pk)
    sr = AutomationStepRun.objects.get(run=run)
    step_execute(run.pk, sr.pk, 0)
    DueTask.objects.all().delete()
    assert "retry 2 scheduled" in step_execute(run.pk, sr.pk, 1)
    assert step_execute(run.pk, sr.pk, 1) == "retry not claimed"
    assert [row.args[2] for row in DueTask.objects.all()] == [2]
    failing_email.refresh_from_db()
    assert failing_email.consecutive_run_failures == 0


def test_a_completion_that_is_not_applied_rolls_the_step_back(monkeypatch, make_automation, contact):
    # Given a step whose step run is failed by someone else while the module executes
    from automations.lifecycle import step_run_fail
    from automations.steps import delay

    automation = make_automation([DELAY_1H, DELAY_1H], status="active")
    run = enter(automation, contact)
    run_start(run.pk)
    sr = AutomationStepRun.objects.get(run=run)
    real = delay.execute

    def execute(ctx, config):
        step_run_fail(ctx.step_run_id, at=timezone.now(), error="failed meanwhile")
        AutomationStep.objects.filter(pk=sr.step_id).update(config={"duration": 2, "unit": "hours"})
        return real(ctx, config)

    monkeypatch.setattr(delay, "execute", execute)
    assert step_execute(run.pk, sr.pk, 0) == "completion not applied: step rolled back"
    # then nothing the step did is kept and the run did not advance
    sr.refresh_from_db()
    run.refresh_from_db()
    assert sr.status == "executing"  # the failure inside the rolled-back step is gone too
    assert AutomationStep.objects.get(pk=sr.step_id).config == {"duration": 1, "unit": "hours"}
    assert (run.current_step_index, AutomationStepRun.objects.filter(run=run).count()) == (0, 1)


@pytest.mark.django_db(transaction=True)
def test_racing_claims_have_exactly_one_winner(make_automation, make_contact):
    automation = make_automation([DELAY_1H, DELAY_1H], status="active")
    runs = [enter(automation, make_contact()) for _ in range(5)]
    for run in runs:
        run_start(run.pk)
    rows = list(AutomationStepRun.objects.filter(run__in=runs))
    results: dict[str, list[str]] = {str(sr.pk): [] for sr in rows}

    def worker(_: int) -> None:
        for sr in rows:
            results[str(sr.pk)].append(step_execute(sr.run_id, sr.pk, 0))

    race(worker, threads=4)
    for outcomes in results.values():
        assert outcomes.count("advanced to step 1") == 1, outcomes
    assert set(
        AutomationRun.objects.filter(pk__in=[r.pk for r in runs]).values_list("steps_executed", flat=True)
    ) == {1}
    assert AutomationStepRun.objects.filter(run__in=runs, step_index=1).count() == 5
    assert funnel(automation) == {0: (0, 0, 5, 0, 0), 1: (5, 0, 0, 0, 0)}


@pytest.mark.django_db(transaction=True)
def test_racing_retry_claims_have_exactly_one_winner(failing_email, make_contact, org):
    run = enter(failing_email, make_contact())
    run_start(run.pk)
    sr = AutomationStepRun.objects.get(run=run)
    step_execute(run.pk, sr.pk, 0)
    OrganizationSettings.objects.filter(organization=org).update(default_from_email="hello@acme.test")
    outcomes = race(lambda _: step_execute(run.pk, sr.pk, 1), threads=4)
    assert outcomes.count("run completed") == 1, outcomes
    assert TransactionalSend.objects.filter(automation_id=failing_email.pk).count() == 1
    drain_queue()


def test_a_row_named_twice_in_one_batch_moves_in_two_rounds(make_automation, make_contact):
    automation = make_automation([DELAY_1H], status="active")
    [sr] = pending_rows(automation, make_contact, 1)
    outcomes = STEP_RUNS.transition_many(
        [Move(sr, "executing"), Move(sr, "completed", {"attempt": 0})], actor="test"
    )
    assert [(o.ok, o.from_state, o.to_state) for o in outcomes] == [
        (True, "pending", "executing"),
        (True, "executing", "completed"),
    ]
    assert AutomationStepRun.objects.get(pk=sr.pk).status == "completed"
    assert funnel(automation)[0] == (0, 0, 1, 0, 0)  # each move counted once
