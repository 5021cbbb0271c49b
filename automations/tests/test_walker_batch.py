"""The batched walker (issue 12 item 1): batch claims, one hop per batch, a raising step fails alone, two
concurrent claimers take every row exactly once, and tasks delivered twice still send each mail once."""

from __future__ import annotations

import datetime as dt
import threading
import time

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from automations.lifecycle import step_runs_claim_due
from automations.models import AutomationRun, AutomationStepRun
from automations.triggers import automation_fanout
from automations.walker import run_start
from automations.walker_batch import walk
from delivery.models import TransactionalSend
from owlat.models import DueTask, WakeUp
from owlat.registry import TriggerEvent
from testsupport import clear_queue, drain_queue, queued_tasks

WALK = "automations.tasks.automation_walk_task"
ALWAYS = {"kind": "contact_property", "field": "email", "operator": "not_empty"}
PLAN_IS_PRO = {"kind": "contact_property", "field": "plan", "operator": "equals", "value": "pro"}


pytestmark = pytest.mark.usefixtures("local_email")  # `template` and `local_email`: conftest.py


def email_step(template):
    return ("email", {"emailTemplateId": str(template.pk)})


def condition(cond=PLAN_IS_PRO):
    return ("condition", {"condition": cond, "yesBranchStepIndex": None, "noBranchStepIndex": None})


def start_runs(automation, contacts) -> list[AutomationRun]:
    runs = []
    for contact in contacts:
        data = {"eventName": automation.trigger_config["eventName"]} if automation.trigger_config else {}
        [run_id] = automation_fanout(
            TriggerEvent(automation.trigger_type, str(automation.organization_id), str(contact.pk), data)
        )
        run_start(run_id)
        runs.append(AutomationRun.objects.get(pk=run_id))
    return runs


def test_a_batch_walks_every_due_step_run_with_one_hop(make_automation, make_contact, template):
    # Given ten runs of email → condition → email whose first steps are due
    automation = make_automation([email_step(template), condition(), email_step(template)], status="active")
    runs = start_runs(automation, [make_contact() for _ in range(10)])
    clear_queue()
    # when one walk runs, it executes all ten first steps and enqueues exactly one hop for the next batch
    assert walk().startswith("10 step runs")
    assert [t.func for t in queued_tasks(queue="default")] == [WALK]
    assert TransactionalSend.objects.filter(automation_id=automation.pk).count() == 10
    # then the next two batches finish every run with two mails each
    drain_queue()
    for run in runs:
        run.refresh_from_db()
        assert (run.status, run.steps_executed) == ("completed", 3)
    assert TransactionalSend.objects.filter(automation_id=automation.pk).count() == 20
    statuses = list(AutomationStepRun.objects.filter(run__in=runs).values_list("status", flat=True))
    assert statuses == ["completed"] * 30


@pytest.mark.skipif(
    connection.vendor != "postgresql", reason="statement counts of PostgreSQL's set-based claim"
)
def test_statements_per_batch_do_not_grow_with_the_batch(make_automation, make_contact, template):
    def statements_for(n: int) -> int:
        automation = make_automation(
            [email_step(template), condition(), email_step(template)],
            trigger_type="event_received",
            trigger_config={"eventName": f"batch-{n}"},
            status="active",
        )
        start_runs(automation, [make_contact() for _ in range(n)])
        clear_queue()
        with CaptureQueriesContext(connection) as ctx:
            assert walk().startswith(f"{n} step runs")
        drain_queue()
        return len(ctx.captured_queries)

    # runs, contacts, steps and templates are read once per batch; the writes are set-based
    assert statements_for(3) == statements_for(12)


def test_a_raising_step_fails_alone_not_its_batch(monkeypatch, make_automation, make_contact):
    from automations.steps import condition as condition_module

    automation = make_automation([condition(), condition()], status="active")
    contacts = [make_contact() for _ in range(4)]
    bad = contacts[2]
    runs = start_runs(automation, contacts)
    clear_queue()
    real = condition_module.evaluate_condition if hasattr(condition_module, "evaluate_condition") else None
    assert real is None  # the module imports it lazily: patch the kernel function it calls

    import owlat.conditions as conditions

    original = conditions.evaluate_condition

    def evaluate(cond, contact, **kwargs):
        if contact.pk == bad.pk:
            raise RuntimeError("boom for one contact")
        return original(cond, contact, **kwargs)

    monkeypatch.setattr(conditions, "evaluate_condition", evaluate)
    walk()
    by_contact = {run.contact_id: run for run in runs}
    for contact in contacts:
        run = by_contact[contact.pk]
        run.refresh_from_db()
        [first, *rest] = AutomationStepRun.objects.filter(run=run).order_by("scheduled_at", "step_index")
        if contact.pk == bad.pk:
            # the raising step goes to its first retry (1 s), the run waits
            assert (first.status, first.retry_count, first.error_message) == (
                "executing",
                1,
                "boom for one contact",
            )
            assert rest == [] and run.current_step_index == 0
            [retry] = DueTask.objects.filter(func="automations.tasks.automation_step_execute_task")
            assert retry.args == [str(run.pk), str(first.pk), 1]
        else:
            assert first.status == "completed" and run.current_step_index == 1
            assert [r.status for r in rest] == ["pending"]


def test_a_batch_that_raises_while_writing_is_written_one_by_one(
    monkeypatch, make_automation, make_contact, template
):
    # Given an email step whose send rows cannot be written for one contact
    import delivery.services as delivery_services

    automation = make_automation([email_step(template)], status="active")
    contacts = [make_contact() for _ in range(3)]
    bad = contacts[1]
    runs = start_runs(automation, contacts)
    clear_queue()
    original = delivery_services.automation_email_insert_many

    def insert(sends):
        if any(s.contact_id == bad.pk for s in sends):
            raise RuntimeError("insert refused")
        return original(sends)

    monkeypatch.setattr(delivery_services, "automation_email_insert_many", insert)
    walk()
    # then the two others got their mail and completed; the failing one is retried alone
    sends = TransactionalSend.objects.filter(automation_id=automation.pk)
    assert sorted(s.contact_id for s in sends) == sorted(c.pk for c in contacts if c.pk != bad.pk)
    for run in runs:
        run.refresh_from_db()
        [sr] = AutomationStepRun.objects.filter(run=run)
        if run.contact_id == bad.pk:
            assert (run.status, sr.status, sr.retry_count) == ("running", "executing", 1)
        else:
            assert (run.status, sr.status, sr.email_send_id) == (
                "completed",
                "completed",
                str(sends.get(contact_id=run.contact_id).pk),
            )


def test_loop_cap_and_active_guard_hold_inside_a_batch(make_automation, make_contact):
    from automations.lifecycle import automation_transition

    looping = make_automation(
        [("condition", {"condition": ALWAYS, "yesBranchStepIndex": 0, "noBranchStepIndex": 0})],
        status="active",
    )
    paused = make_automation(
        [condition(), condition()],
        trigger_type="event_received",
        trigger_config={"eventName": "go"},
        status="active",
    )
    loop_run = start_runs(looping, [make_contact()])[0]
    paused_run = start_runs(paused, [make_contact()])[0]
    automation_transition(automation_id=paused.pk, to="paused", actor="u")
    drain_queue()
    loop_run.refresh_from_db()
    paused_run.refresh_from_db()
    assert (loop_run.status, loop_run.steps_executed) == ("cancelled", 101)
    [sr] = AutomationStepRun.objects.filter(run=paused_run)
    assert (paused_run.status, sr.status, sr.error_message) == (
        "cancelled",
        "failed",
        "Automation is no longer active",
    )


@pytest.mark.django_db(transaction=True)
def test_two_concurrent_batch_claimers_take_every_row_exactly_once(make_automation, make_contact):
    from django.utils import timezone

    automation = make_automation([condition(), condition()], status="active")
    start_runs(automation, [make_contact() for _ in range(60)])
    due = set(AutomationStepRun.objects.filter(status="pending").values_list("pk", flat=True))
    assert len(due) == 60
    barrier = threading.Barrier(2)
    taken: list[list] = [[], []]
    errors: list[BaseException] = []

    def claimer(slot: int) -> None:
        try:
            barrier.wait()
            while True:
                batch = step_runs_claim_due(at=timezone.now(), limit=7)
                if not batch:
                    return
                taken[slot].extend(c.step_run.pk for c in batch)
        except BaseException as exc:  # reported by the main thread
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=claimer, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert set(taken[0]).isdisjoint(taken[1])
    assert sorted(taken[0] + taken[1]) == sorted(due)
    if connection.vendor == "postgresql":  # SQLite serializes the claims: one claimer may take every batch
        assert taken[0] and taken[1]  # both claimers did work
    assert set(AutomationStepRun.objects.filter(status="executing").values_list("pk", flat=True)) == due
    assert set(AutomationRun.objects.values_list("steps_executed", flat=True)) == {1}


@pytest.mark.django_db(transaction=True)
def test_two_concurrent_walks_execute_each_step_once(make_automation, make_contact, template):
    automation = make_automation([email_step(template), condition(), email_step(template)], status="active")
    runs = start_runs(automation, [make_contact() for _ in range(40)])
    barrier = threading.Barrier(2)
    errors: list[BaseException] = []

    def walker() -> None:
        try:
            barrier.wait()
            for _ in range(30):
                walk(limit=9)
        except BaseException as exc:
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=walker) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert TransactionalSend.objects.filter(automation_id=automation.pk).count() == 80
    for run in runs:
        run.refresh_from_db()
        assert (run.status, run.steps_executed) == ("completed", 3)


def test_every_task_delivered_twice_still_walks_each_step_once(
    settings, make_automation, make_contact, template
):
    settings.OWLAT_TEST_DELIVER_TWICE = True
    automation = make_automation(
        [
            email_step(template),
            condition(),
            ("delay", {"duration": 1, "unit": "minutes"}),
            email_step(template),
        ],
        status="active",
    )
    runs = [
        AutomationRun.objects.get(pk=run_id)
        for contact in [make_contact() for _ in range(5)]
        for run_id in automation_fanout(
            TriggerEvent("contact_created", str(automation.organization_id), str(contact.pk))
        )
    ]
    drain_queue()
    assert TransactionalSend.objects.filter(automation_id=automation.pk).count() == 5
    # the delay comes due: its task (delivered twice) and a walk race for the same step runs
    from datetime import timedelta

    from django.utils import timezone

    DueTask.objects.update(due_at=timezone.now() - timedelta(seconds=1))
    AutomationStepRun.objects.filter(status="pending").update(
        delay_until=timezone.now() - timedelta(seconds=1)
    )
    drain_queue()
    walk()
    assert TransactionalSend.objects.filter(automation_id=automation.pk).count() == 10
    for run in runs:
        run.refresh_from_db()
        assert (run.status, run.steps_executed) == ("completed", 4)
        assert (
            list(AutomationStepRun.objects.filter(run=run).values_list("status", flat=True))
            == ["completed"] * 4
        )


def test_batch_send_rows_are_written_as_the_single_variant_writes_them(
    make_automation, make_contact, template
):
    # The batch variant inserts its rows column by column (PostgreSQL): every column as the single variant's save
    from delivery.services import AutomationEmailRequest, automation_email_queue, automation_email_queue_many

    automation = make_automation([email_step(template)], status="active")
    org_id = str(automation.organization_id)
    contacts = [make_contact(first_name=name) for name in ("Ada", "Bo", "Cy")]
    single = automation_email_queue(
        organization_id=org_id,
        contact_id=str(contacts[0].pk),
        automation_id=str(automation.pk),
        email_template_id=str(template.pk),
    )
    batch = automation_email_queue_many(
        [
            AutomationEmailRequest(org_id, str(c.pk), str(automation.pk), str(template.pk), contact=c)
            for c in contacts
        ]
    )
    assert [r.status for r in batch] == ["queued"] * 3

    def columns(send_id):
        row = TransactionalSend.objects.get(pk=send_id)
        return {
            f.attname: getattr(row, f.attname)
            for f in TransactionalSend._meta.concrete_fields
            if f.attname not in ("id", "queued_at")
        }

    assert columns(batch[0].send_id) == columns(single.send_id)
    assert [columns(r.send_id)["subject"] for r in batch] == ["Hi Ada", "Hi Bo", "Hi Cy"]
    assert columns(batch[1].send_id)["data_variables"]["firstName"] == "Bo"


def test_a_full_batch_leaves_one_hop_for_its_backlog(make_automation, make_contact, template):
    # Given five runs whose first steps are due and a batch size of three
    automation = make_automation([email_step(template), condition(), email_step(template)], status="active")
    start_runs(automation, [make_contact() for _ in range(5)])
    clear_queue()
    # a full batch that created immediate next steps woke the next walk itself: one hop, not two
    assert walk(limit=3).startswith("3 step runs")
    assert [t.func for t in queued_tasks(queue="default")] == [WALK]
    # a full batch that created none (its runs finished) still leaves one hop for the backlog
    last = make_automation(
        [condition()], trigger_type="event_received", trigger_config={"eventName": "last"}, status="active"
    )
    start_runs(last, [make_contact() for _ in range(5)])
    AutomationStepRun.objects.filter(run__automation=automation, status="pending").delete()
    clear_queue()
    assert walk(limit=3) == "3 step runs: 3 run completed"
    assert [t.func for t in queued_tasks(queue="default")] == [WALK]


@pytest.mark.skipif(
    connection.vendor != "postgresql", reason="wake-up dedup (advisory locks) is PostgreSQL's"
)
def test_events_wake_the_walker_once_while_a_walk_is_pending(make_automation, make_contact, template):
    from automations.tasks import automation_walk_task

    # Given six events, each opening a run whose first step is due at once
    automation = make_automation([email_step(template), condition(), email_step(template)], status="active")
    runs = start_runs(automation, [make_contact() for _ in range(6)])
    # then one walk is queued, not six (issue 12 item 2: the others found it pending)
    assert [t.func for t in queued_tasks(queue="default")] == [WALK]
    assert WakeUp.objects.filter(func=WALK).exists()
    # when it runs, it takes the wake-up and walks every run to its end
    assert [t.func for t in drain_queue(queue="default")] == [WALK]
    assert not WakeUp.objects.exists()
    for run in runs:
        run.refresh_from_db()
        assert (run.status, run.steps_executed) == ("completed", 3)
    assert TransactionalSend.objects.filter(automation_id=automation.pk).count() == 12
    # and the next event wakes a new walk
    start_runs(automation, [make_contact()])
    assert [t.func for t in queued_tasks(queue="default")] == [WALK]
    assert automation_walk_task().startswith("1 step runs")


@pytest.mark.skipif(
    connection.vendor != "postgresql", reason="wake-up dedup (advisory locks) is PostgreSQL's"
)
def test_events_during_a_walk_queue_no_further_walk(make_automation, make_contact, template):
    from automations.tasks import automation_walk_task

    # Given a walk pending for earlier events (its wake-up marked)
    automation = make_automation([email_step(template), condition(), email_step(template)], status="active")
    first = start_runs(automation, [make_contact() for _ in range(2)])
    assert [t.func for t in queued_tasks(queue="default")] == [WALK]
    # when more events arrive before it ends, they rely on it and queue nothing
    later = start_runs(automation, [make_contact() for _ in range(3)])
    assert [t.func for t in queued_tasks(queue="default")] == [WALK]
    pending = WakeUp.objects.get(func=WALK)
    # then the one walk takes all of them, gives up its wake-up when nothing is left and queues nothing
    assert automation_walk_task().startswith("5 step runs")
    assert not WakeUp.objects.filter(pk=pending.pk).exists()
    for run in first + later:
        run.refresh_from_db()
        assert (run.status, run.steps_executed) == ("completed", 3)
    assert [t.func for t in queued_tasks(queue="default")] == [WALK]  # the one queued before, now a no-op
    assert drain_queue(queue="default")[0].result == "nothing due"


class _PausedClock:
    """The walk's clock for a test: `sleep` records the pause and moves `monotonic` on by it instead of waiting,
    so the walk sees the time its pauses take (its stream rate, `_Stream`, is measured over it) as it would."""

    def __init__(self) -> None:
        self.pauses: list[float] = []
        self.slept = 0.0

    def sleep(self, seconds: float) -> None:
        self.pauses.append(seconds)
        self.slept += seconds

    def monotonic(self) -> float:
        return time.monotonic() + self.slept


def test_after_a_small_batch_the_walk_pauses_for_the_stream(
    make_automation, make_contact, template, monkeypatch, settings
):
    from automations import walker_batch

    automation = make_automation([email_step(template), condition(), email_step(template)], status="active")
    start_runs(automation, [make_contact() for _ in range(4)])
    clock = _PausedClock()
    pauses = clock.pauses
    monkeypatch.setattr(walker_batch, "time", clock)
    # batches smaller than WALK_LINGER_BELOW pause before the next claim (three steps: three batches of four)
    assert walker_batch.walk_hop().count("4 step runs") == 3
    assert pauses == [0.1] * 3  # AUTOMATION_WALK_LINGER_MS, 100 by default
    # full batches do not: a backlog is walked without pauses
    start_runs(automation, [make_contact() for _ in range(4)])
    pauses.clear()
    assert walker_batch.walk_hop(limit=4).count("4 step runs") == 3
    assert pauses == []
    # and with the setting at 0 there is no pause
    settings.AUTOMATION_WALK_LINGER_MS = 0
    start_runs(automation, [make_contact() for _ in range(4)])
    assert walker_batch.walk_hop().count("4 step runs") == 3
    assert pauses == []


def test_under_a_fast_stream_the_pause_waits_for_a_full_batch(settings):
    from automations.walker_batch import _Stream

    # A slow stream (20 step runs per 130 ms, as at 50 events/s): the base pause after each small batch
    slow = _Stream(200)
    assert [slow.pause(t * 0.13, 20, t * 0.13 + 0.03) for t in range(5)] == [0.1] * 5
    # a fast one (100 step runs per 130 ms, 770/s: half a batch within 300 ms): from its second claim on, the
    # time a full batch takes to arrive (200 / 770 s) less the time the batch took, at most 300 ms
    fast = _Stream(200)
    assert fast.pause(0.0, 100, 0.03) == 0  # no rate yet: a batch of 50 or more does not pause, as before
    assert fast.pause(0.13, 100, 0.16) == pytest.approx(200 / (100 / 0.13) - 0.03)
    # at 400/s (a batch takes 500 ms to arrive) the pause is the longest, AUTOMATION_WALK_LINGER_MAX_MS
    steady = _Stream(200)
    assert [steady.pause(t * 0.1, 40, t * 0.1 + 0.01) for t in range(3)] == [0.1, 0.3, 0.3]
    # full batches never pause (a backlog)
    assert steady.pause(0.3, 200, 0.31) == 0
    # and with the longest pause not above the base one, the base rule alone
    settings.AUTOMATION_WALK_LINGER_MAX_MS = 100
    assert steady.pause(0.4, 40, 0.41) == 0.1
    assert steady.pause(0.5, 60, 0.51) == 0
    settings.AUTOMATION_WALK_LINGER_MS = 0
    assert steady.pause(0.6, 40, 0.61) == 0


@pytest.mark.skipif(
    connection.vendor != "postgresql", reason="wake-up dedup (advisory locks) is PostgreSQL's"
)
def test_the_walk_task_walks_on_in_one_hop_within_its_budget(make_automation, make_contact, template):
    from automations.tasks import automation_walk_task
    from automations.walker_batch import walk_hop

    automation = make_automation([email_step(template), condition(), email_step(template)], status="active")
    runs = start_runs(automation, [make_contact() for _ in range(4)])
    clear_queue()
    # the task walks the three steps batch after batch without a django-q2 hop between them
    assert automation_walk_task().count("4 step runs") == 3
    assert queued_tasks(queue="default") == []
    for run in runs:
        run.refresh_from_db()
        assert (run.status, run.steps_executed) == ("completed", 3)
    assert TransactionalSend.objects.filter(automation_id=automation.pk).count() == 8
    # with its budget spent and work left, the task hands on to the next walk, which inherits the wake-up
    more = start_runs(automation, [make_contact() for _ in range(2)])
    clear_queue()
    WakeUp.objects.create(func=WALK, created_at=timezone.now() - dt.timedelta(seconds=50))
    assert walk_hop(seconds=0) == "2 step runs: 2 advanced to step 1"
    assert [t.func for t in queued_tasks(queue="default")] == [WALK]
    assert WakeUp.objects.get(func=WALK).created_at > timezone.now() - dt.timedelta(seconds=5)
    drain_queue()
    for run in more:
        run.refresh_from_db()
        assert run.status == "completed"


@pytest.mark.django_db
def test_the_claim_reads_each_run_with_its_contact_and_automation(make_automation, make_contact):
    """The batch claim statement returns each claimed step run's run (with the run's own increment of
    `steps_executed`), contact and automation (JSON fields decoded), so the executor reads no runs of its
    own; a claim without them (a retry) still gets its run read."""
    from django.utils import timezone

    automation = make_automation(
        [condition(), condition()],
        trigger_type="event_received",
        trigger_config={"eventName": "go"},
        status="active",
    )
    contacts = [make_contact() for _ in range(3)]
    start_runs(automation, contacts)
    claimed = step_runs_claim_due(at=timezone.now(), limit=10)
    assert len(claimed) == 3
    with CaptureQueriesContext(connection) as queries:
        for c in claimed:
            assert c.run.pk == c.step_run.run_id and c.run.steps_executed == c.executed
            assert c.run.contact.pk == c.run.contact_id and c.run.contact.email
            assert c.run.automation.pk == automation.pk and c.run.automation.status == "active"
            assert c.run.automation.trigger_config == {"eventName": "go"}  # JSON decoded
            assert c.run.trigger_data == {"eventName": "go"}
    assert len(queries) == 0
    from automations.walker_batch import execute_claimed

    with CaptureQueriesContext(connection) as queries:
        execute_claimed(claimed, now=timezone.now(), wake=False)
    assert not [q for q in queries.captured_queries if 'FROM "automations_automationrun"' in q["sql"]]
    assert AutomationStepRun.objects.filter(status="completed").count() == 3
