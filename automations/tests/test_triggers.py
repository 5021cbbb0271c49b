"""AUT-15 … AUT-18: trigger kinds, matching, firing from the kernel write paths, the fanout pipeline."""

from __future__ import annotations

import threading

import pytest
from django.db import connection, transaction

from automations.counters import counters_rollup
from automations.models import AutomationRun, AutomationStepRun
from automations.tests.conftest import DELAY_1H
from automations.triggers import automation_fanout, trigger_matches
from owlat.registry import TriggerEvent
from owlat.triggers import fire_trigger
from testsupport import queued_tasks

START_TASK = "automations.tasks.automation_run_start_task"


def _start_tasks():
    return [t.args[0] for t in queued_tasks() if t.func == START_TASK]


def test_trigger_matching_rules():
    assert trigger_matches("contact_created", None, {}) == (True, None)
    assert trigger_matches(
        "contact_updated", {"propertyKey": "firstName"}, {"changedFields": ["firstName"]}
    ) == (
        True,
        {"propertyKey": "firstName"},
    )
    assert (
        trigger_matches("contact_updated", {"propertyKey": "email"}, {"changedFields": ["firstName"]})[0]
        is False
    )
    assert trigger_matches("event_received", {"eventName": "signup"}, {"eventName": "signup"}) == (
        True,
        {"eventName": "signup"},
    )
    # exact, case-sensitive
    assert trigger_matches("event_received", {"eventName": "signup"}, {"eventName": "Signup"})[0] is False
    assert trigger_matches(
        "event_received",
        {"eventName": "paid"},
        {"eventName": "paid", "eventProperties": {"plan": "pro", "n": 2}},
    ) == (True, {"eventName": "paid", "eventProperties": '{"n":2,"plan":"pro"}'})
    assert trigger_matches("topic_subscribed", {"topicId": "t1"}, {"topicId": "t1"}) == (
        True,
        {"topicId": "t1"},
    )
    assert trigger_matches("topic_subscribed", {"topicId": "t1"}, {"topicId": "t2"})[0] is False


@pytest.mark.parametrize(
    ("kind", "config"),
    [
        ("contact_updated", None),
        ("contact_updated", {"propertyKey": 3}),
        ("event_received", {}),
        ("event_received", "signup"),
        ("topic_subscribed", {"topicId": None}),
    ],
)
def test_a_config_without_its_string_key_never_matches_and_never_raises(kind, config):
    data = {"changedFields": ["email"], "eventName": "signup", "topicId": "x"}
    assert trigger_matches(kind, config, data) == (False, None)


def test_contact_creation_opens_a_run_and_schedules_its_start(make_automation, make_contact):
    automation = make_automation([DELAY_1H], status="active")
    from owlat.contacts import contact_find_or_create

    contact, created = contact_find_or_create(
        organization_id=automation.organization_id, email="new@example.com", source="api", actor="t"
    )
    assert created
    run = AutomationRun.objects.get(automation=automation, contact=contact)
    assert (run.status, run.current_step_index, run.steps_executed, run.triggered_by, run.trigger_data) == (
        "running",
        0,
        0,
        "contact_created",
        None,
    )
    # started in the same transaction (issue 12 item 3): step 0 pending until its delay, no start task
    [sr] = AutomationStepRun.objects.filter(run=run)
    assert (sr.status, sr.step_index, sr.delay_until) == ("pending", 0, run.next_step_at)
    assert sr.delay_until is not None and _start_tasks() == []
    counters_rollup()  # counters move as deltas (issue 12 item 2)
    automation.refresh_from_db()
    assert (automation.stats_entered, automation.stats_active) == (1, 1)


def test_bulk_import_does_not_fire(make_automation, make_contact):
    automation = make_automation([DELAY_1H], status="active")
    make_contact("imported@example.com")  # the factory uses fire=False, as bulk import does
    assert not AutomationRun.objects.filter(automation=automation).exists()


def test_only_active_automations_with_steps_and_the_right_kind_fan_out(make_automation, contact):
    active = make_automation([DELAY_1H], status="active")
    make_automation([DELAY_1H], status="draft")
    make_automation([DELAY_1H], status="paused")
    make_automation(
        [DELAY_1H], status="active", trigger_type="event_received", trigger_config={"eventName": "x"}
    )
    stepless = make_automation([DELAY_1H], status="active")
    stepless.steps.all().delete()

    run_ids = fire_trigger("contact_created", organization_id=contact.organization_id, contact_id=contact.pk)

    assert [str(r.pk) for r in AutomationRun.objects.all()] == run_ids
    assert AutomationRun.objects.get().automation_id == active.pk


def test_other_organizations_automations_do_not_fan_out(make_automation, contact):
    from owlat.organizations import organization_create

    other = organization_create(name="Other")
    make_automation([DELAY_1H], status="active", organization=other)
    assert (
        fire_trigger("contact_created", organization_id=contact.organization_id, contact_id=contact.pk) == []
    )


def test_a_running_run_blocks_reentry_but_finished_runs_do_not(make_automation, contact):
    from automations.lifecycle import run_cancel, run_complete

    automation = make_automation([DELAY_1H], status="active")
    event = TriggerEvent("contact_created", str(contact.organization_id), str(contact.pk))
    first = automation_fanout(event)
    assert len(first) == 1
    assert automation_fanout(event) == []
    run_complete(first[0])
    second = automation_fanout(event)
    assert len(second) == 1
    run_cancel(second[0])
    assert len(automation_fanout(event)) == 1
    counters_rollup()  # counters move as deltas (issue 12 item 2)
    automation.refresh_from_db()
    assert (automation.stats_entered, automation.stats_completed, automation.stats_cancelled) == (3, 1, 1)
    assert automation.stats_active == 1


def test_contact_update_fires_for_the_watched_field(make_automation, contact):
    from owlat.contacts import contact_update

    automation = make_automation(
        [DELAY_1H],
        status="active",
        trigger_type="contact_updated",
        trigger_config={"propertyKey": "lastName"},
    )
    contact_update(contact=contact, changes={"first_name": "Janet"}, actor="t")
    assert not AutomationRun.objects.exists()
    contact_update(contact=contact, changes={"last_name": "Doe"}, actor="t")
    run = AutomationRun.objects.get(automation=automation)
    assert run.trigger_data == {"propertyKey": "lastName"}


def test_topic_subscription_fires_topic_subscribed(make_automation, contact, org):
    from owlat.models import Topic
    from owlat.topics import topic_subscribe

    topic = Topic.objects.create(organization=org, name="News", require_double_opt_in=False)
    other = Topic.objects.create(organization=org, name="Other", require_double_opt_in=False)
    automation = make_automation(
        [DELAY_1H],
        status="active",
        trigger_type="topic_subscribed",
        trigger_config={"topicId": str(topic.pk)},
    )
    topic_subscribe(contact=contact, topic=other, source="api", actor="t")
    assert not AutomationRun.objects.exists()
    topic_subscribe(contact=contact, topic=topic, source="api", actor="t")
    assert AutomationRun.objects.get(automation=automation).trigger_data == {"topicId": str(topic.pk)}


def test_a_rolled_back_firing_leaves_no_run_and_no_task(make_automation, contact):
    make_automation([DELAY_1H], status="active")
    with pytest.raises(RuntimeError), transaction.atomic():
        fire_trigger("contact_created", organization_id=contact.organization_id, contact_id=contact.pk)
        raise RuntimeError
    assert not AutomationRun.objects.exists()
    assert _start_tasks() == []


@pytest.mark.django_db(transaction=True)
def test_simultaneous_firings_open_one_running_run(make_automation, contact):
    automation = make_automation([DELAY_1H], status="active")
    barrier = threading.Barrier(4)
    results: list[list[str]] = []

    def go():
        try:
            barrier.wait()
            with transaction.atomic():
                results.append(
                    fire_trigger(
                        "contact_created", organization_id=contact.organization_id, contact_id=contact.pk
                    )
                )
        finally:
            connection.close()

    threads = [threading.Thread(target=go) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sum(len(r) for r in results) == 1
    assert AutomationRun.objects.filter(automation=automation, status="running").count() == 1
    counters_rollup()  # counters move as deltas (issue 12 item 2)
    automation.refresh_from_db()
    assert automation.stats_entered == 1


def test_erasing_a_contact_cancels_its_running_runs_before_they_go(make_automation, contact):
    from automations.walker import run_start, step_execute
    from owlat.contacts import contact_erase

    automation = make_automation([DELAY_1H], status="active")
    [run_id] = automation_fanout(
        TriggerEvent("contact_created", str(contact.organization_id), str(contact.pk))
    )
    run_start(run_id)
    step_run_id = str(AutomationRun.objects.get(pk=run_id).step_runs.get().pk)
    contact_erase(contact=contact, actor="t")
    assert not AutomationRun.objects.filter(pk=run_id).exists()
    counters_rollup()  # counters move as deltas (issue 12 item 2)
    automation.refresh_from_db()
    assert (automation.stats_entered, automation.stats_cancelled, automation.stats_active) == (1, 1, 0)
    # the delayed dispatch that was still due finds nothing to do
    assert step_execute(run_id, step_run_id) == "step run not found"
