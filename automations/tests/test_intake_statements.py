"""Cheaper intake (issue 12 item 3): the statements one events API call costs, asserted so it cannot creep back.

Before issue 12 item 3 (this test run on the tree just before it): an event for an existing contact that starts
one automation took 18 statements, an event that creates the contact and starts two automations
(contact_created and event_received) took 37 — and each run then needed its own start task (AUT-18, about 8
statements and a queue hop per run). Then 16 and 33; now 15 and 31 (the fan-out reads the candidate
automations with their step 0 in one statement), and that includes starting the runs (step 0's step runs, one
walker hop). Then 9 and 22: no savepoint of the API view without an Idempotency-Key, the runs, step 0's step
runs and their counter deltas in one statement, the event with its activity in one, the walker's broker row
written directly. Then 7 and 21: the API key's lookup takes its rate-limit token in the same statement, and
the contact is read with the candidate automations. The counts include the API key, rate limit, idempotency and transaction statements of the API layer
(savepoints as Django reports them), which this item does not own.
"""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from automations.models import AutomationRun
from automations.tests.conftest import DELAY_1H
from owlat.models import AuditLog, ContactActivity, Event
from testsupport import queued_tasks
from testsupport.api import ApiClient, make_key

EXISTING_BEFORE, NEW_BEFORE = 18, 37
EXISTING_NOW, NEW_NOW = 7, 21


@pytest.fixture(autouse=True)
def _no_rate_limit(settings):
    settings.API_RATE_LIMIT_PER_SECOND = 10_000
    settings.API_RATE_LIMIT_BURST = 10_000


@pytest.fixture
def api(org):
    _, raw = make_key(org, scopes=["events:write"])
    return ApiClient(raw)


def statements(api, body, **kw) -> tuple[int, list[str]]:
    with CaptureQueriesContext(connection) as ctx:
        r = api.post("/events", body, **kw)
    assert r.status_code == 201, r.content
    return len(ctx.captured_queries), [q["sql"] for q in ctx.captured_queries]


@pytest.mark.skipif(connection.vendor != "postgresql", reason="statement counts of PostgreSQL")
def test_an_event_costs_fewer_statements_and_still_writes_everything(api, org, make_automation, make_contact):
    on_event = make_automation(
        [DELAY_1H], trigger_type="event_received", trigger_config={"eventName": "signup"}, status="active"
    )
    on_create = make_automation([DELAY_1H], trigger_type="contact_created", status="active")
    make_contact("old@example.com")
    api.post("/events", {"email": "warm@example.com", "eventName": "other", "createContactIfNotExists": True})

    existing, sql = statements(api, {"email": "old@example.com", "eventName": "signup"})
    new, sql_new = statements(
        api, {"email": "new@example.com", "eventName": "signup", "createContactIfNotExists": True}
    )
    print(f"\nevent for an existing contact: {existing} statements (before: {EXISTING_BEFORE})")
    print(f"event creating its contact: {new} statements (before: {NEW_BEFORE})")
    assert existing <= EXISTING_NOW < EXISTING_BEFORE
    assert not any(s.startswith("UPDATE") and "owlat_event" in s for s in sql)  # inserted with its count
    assert sum("INSERT INTO automations_automationrun" in s for s in sql) == 1
    assert new <= NEW_NOW < NEW_BEFORE

    # everything the semantics require is still written: contact, identity, event with its count, activities,
    # the audit row of the creation, one run per automation, and their start (step 0 pending, no start task)
    event = Event.objects.get(contact__email="new@example.com", event_name="signup")
    assert event.triggered_automations == 1
    assert set(
        ContactActivity.objects.filter(contact=event.contact).values_list("activity_type", flat=True)
    ) >= {"event_received"}
    assert AuditLog.objects.filter(resource_id=str(event.contact_id)).exists()
    assert set(
        AutomationRun.objects.filter(contact=event.contact).values_list("automation_id", flat=True)
    ) == {
        on_event.pk,
        on_create.pk,
    }
    assert not [t for t in queued_tasks() if t.func == "automations.tasks.automation_run_start_task"]
    from automations.models import AutomationStepRun

    assert AutomationStepRun.objects.filter(step_index=0).count() == AutomationRun.objects.count()


def test_a_second_firing_for_a_running_contact_opens_no_second_run(api, org, make_automation, make_contact):
    make_automation(
        [DELAY_1H], trigger_type="event_received", trigger_config={"eventName": "go"}, status="active"
    )
    make_contact("a@example.com")
    first = api.post("/events", {"email": "a@example.com", "eventName": "go"}).json()["data"]
    second = api.post("/events", {"email": "a@example.com", "eventName": "go"}).json()["data"]
    assert (first["triggeredAutomations"], second["triggeredAutomations"]) == (1, 0)
    assert AutomationRun.objects.count() == 1


@pytest.mark.skipif(
    connection.vendor != "postgresql", reason="the set-based run opening is one statement on PostgreSQL"
)
def test_an_event_whose_step_0_is_due_at_once_wakes_the_walker_in_the_same_statement(
    api, org, make_automation, make_contact
):
    # the bench's shape: step 0 runs at once, so the batched walker's wake-up is written by the fan-out's statement
    condition = {"kind": "contact_property", "field": "plan", "operator": "equals", "value": "pro"}
    make_automation(
        [("condition", {"condition": condition, "yesBranchStepIndex": None, "noBranchStepIndex": None})],
        trigger_type="event_received",
        trigger_config={"eventName": "now"},
        status="active",
    )
    make_contact("warm@example.com")
    make_contact("a@example.com")
    api.post("/events", {"email": "warm@example.com", "eventName": "other"})

    count, sql = statements(api, {"email": "a@example.com", "eventName": "now"})
    print(f"\nevent for an existing contact, step 0 due at once: {count} statements")
    assert count <= EXISTING_NOW - 1
    assert not any(s.startswith("INSERT") and "django_q_ormq" in s for s in sql)  # inside the fan-out's CTE
    walks = [t for t in queued_tasks() if t.func == "automations.tasks.automation_walk_task"]
    assert [t.args for t in walks] == [()]
    from automations.models import AutomationStepRun

    [step_run] = AutomationStepRun.objects.all()
    assert (step_run.step_index, step_run.status, step_run.delay_until) == (0, "pending", None)

    # a second event for the same contact opens no run and wakes nothing more
    again = api.post("/events", {"email": "a@example.com", "eventName": "now"}).json()["data"]
    assert again["triggeredAutomations"] == 0
    assert len([t for t in queued_tasks() if t.func == "automations.tasks.automation_walk_task"]) == 1


def test_the_contact_is_read_with_the_candidate_automations(org, make_automation, make_contact):
    # issue 12: one statement gives the live contact's id and the fan-out's candidates for it (as `_candidates`
    # would read them); a missing or deleted contact gives none, an automation without steps or of another
    # organization, kind or status is no candidate, a running run of the contact is reported
    from django.utils import timezone

    from automations.triggers import _candidates, contact_and_candidates
    from owlat.models import Contact
    from owlat.organizations import organization_create
    from owlat.registry import TriggerEvent

    config = {"eventName": "go"}
    with_steps = make_automation(
        [DELAY_1H], trigger_type="event_received", trigger_config=config, status="active"
    )
    make_automation([DELAY_1H], trigger_type="event_received", trigger_config=config, status="paused")
    make_automation([DELAY_1H], trigger_type="contact_created", status="active")
    other = organization_create(name="Other", default_from_email="o@other.test", default_from_name="Other")
    make_automation(
        [DELAY_1H], trigger_type="event_received", trigger_config=config, status="active", organization=other
    )
    jane = make_contact("jane@example.com")
    make_contact("gone@example.com")
    Contact.objects.filter(email="gone@example.com").update(deleted_at=timezone.now())

    def read(email):
        with CaptureQueriesContext(connection) as ctx:
            result = contact_and_candidates(organization_id=org.pk, email=email, kind="event_received")
        assert len(ctx.captured_queries) == 1
        return result

    assert read("nobody@example.com") == (None, [])
    assert read("gone@example.com") == (None, [])
    contact_id, candidates = read("jane@example.com")
    assert contact_id == jane.pk
    event = TriggerEvent(kind="event_received", organization_id=str(org.pk), contact_id=str(jane.pk))
    assert candidates == _candidates(event)
    [candidate] = candidates
    assert (candidate.automation_id, candidate.trigger_config, candidate.has_steps) == (
        with_steps.pk,
        config,
        True,
    )
    assert (candidate.has_running, candidate.first_step.step_type) == (False, "delay")

    # a contact without candidates is still found; a running run is reported
    make_contact("solo@example.com")
    solo_id, none = contact_and_candidates(organization_id=other.pk, email="solo@example.com", kind="x")
    assert (solo_id, none) == (None, [])  # another organization's contact
    AutomationRun.objects.create(
        organization=org,
        automation=with_steps,
        contact=jane,
        status="running",
        triggered_by="event_received",
        started_at=timezone.now(),
    )
    _, [running] = read("jane@example.com")
    assert running.has_running and running == _candidates(event)[0]


def test_a_paused_automation_stops_triggering_at_once(api, org, make_automation, make_contact):
    # nothing about the candidates is kept between requests: pausing or editing the trigger takes effect at once
    from automations.lifecycle import automation_transition
    from automations.models import Automation

    automation = make_automation(
        [DELAY_1H], trigger_type="event_received", trigger_config={"eventName": "go"}, status="active"
    )
    make_contact("a@example.com")
    make_contact("b@example.com")
    make_contact("c@example.com")
    assert (
        api.post("/events", {"email": "a@example.com", "eventName": "go"}).json()["data"][
            "triggeredAutomations"
        ]
        == 1
    )
    assert automation_transition(automation_id=automation.pk, to="paused", actor="test").ok
    assert (
        api.post("/events", {"email": "b@example.com", "eventName": "go"}).json()["data"][
            "triggeredAutomations"
        ]
        == 0
    )
    assert automation_transition(automation_id=automation.pk, to="active", actor="test").ok
    Automation.objects.filter(pk=automation.pk).update(trigger_config={"eventName": "went"})
    assert (
        api.post("/events", {"email": "c@example.com", "eventName": "go"}).json()["data"][
            "triggeredAutomations"
        ]
        == 0
    )
    assert (
        api.post("/events", {"email": "c@example.com", "eventName": "went"}).json()["data"][
            "triggeredAutomations"
        ]
        == 1
    )


@pytest.mark.skipif(connection.vendor != "postgresql", reason="prepared statements are PostgreSQL's")
def test_the_hot_statements_of_an_event_run_prepared(api, org, make_automation, make_contact):
    # issue 12 (PostgreSQL's CPU per event): the key lookup with its rate-limit take, the contact with its
    # candidates, the run opening and the event insert are prepared on the connection once and then only
    # bound and executed — not parsed and planned again on every call
    make_automation(
        [DELAY_1H], trigger_type="event_received", trigger_config={"eventName": "go"}, status="active"
    )
    for email in ("a@example.com", "b@example.com"):
        make_contact(email)
        r = api.post("/events", {"email": email, "eventName": "go"})
        assert r.status_code == 201 and r.json()["data"]["triggeredAutomations"] == 1
    with connection.cursor() as cursor:
        cursor.execute("SELECT statement FROM pg_prepared_statements WHERE from_sql = false")
        prepared = [row[0] for row in cursor.fetchall()]
    for marker in (
        "FROM owlat_apikey",
        "SELECT id FROM owlat_contact",
        "INSERT INTO automations_automationrun",
        "INSERT INTO owlat_event",
    ):
        assert sum(marker in s and "$1" in s for s in prepared) == 1, (marker, prepared)
    assert AutomationRun.objects.count() == 2


NOW_STEP = (
    "condition",
    {
        "condition": {"kind": "contact_property", "field": "plan", "operator": "equals", "value": "pro"},
        "yesBranchStepIndex": None,
        "noBranchStepIndex": None,
    },
)


def test_an_event_answers_a_missing_contact_a_running_run_and_a_delayed_step_0_alike(
    api, org, make_automation, make_contact
):
    # a contact that is missing (404, or created), a running run and a step 0 that became a delay each come
    # out as the fan-out has them
    from automations.models import AutomationStep
    from owlat.models import Contact

    automation = make_automation(
        [NOW_STEP], trigger_type="event_received", trigger_config={"eventName": "go"}, status="active"
    )
    make_contact("a@example.com")
    first = api.post("/events", {"email": "a@example.com", "eventName": "go"}).json()["data"]
    assert first["triggeredAutomations"] == 1

    missing = api.post("/events", {"email": "Nobody@example.com", "eventName": "go"})
    assert missing.status_code == 404 and '"nobody@example.com"' in missing.json()["error"]["message"]
    body = {"email": "new@example.com", "eventName": "go", "createContactIfNotExists": True}
    created = api.post("/events", body).json()["data"]
    assert (created["contactCreated"], created["triggeredAutomations"]) == (True, 1)
    assert Contact.objects.filter(email="new@example.com").count() == 1

    again = api.post("/events", {"email": "a@example.com", "eventName": "go"}).json()["data"]
    assert again["triggeredAutomations"] == 0  # a running run: no second one
    assert Event.objects.filter(contact__email="a@example.com").count() == 2

    AutomationStep.objects.filter(automation=automation, step_index=0).update(
        step_type="delay", config={"duration": 1, "unit": "hours"}
    )
    make_contact("b@example.com")
    delayed = api.post("/events", {"email": "b@example.com", "eventName": "go"}).json()["data"]
    assert delayed["triggeredAutomations"] == 1
    run = AutomationRun.objects.get(contact__email="b@example.com")
    assert run.next_step_at is not None  # the general path's delayed step 0
    assert Event.objects.get(contact__email="b@example.com").triggered_automations == 1
    activities = ContactActivity.objects.filter(
        contact__email="b@example.com", activity_type="event_received"
    )
    assert activities.count() == 1


@pytest.mark.parametrize(
    "config",
    [
        {"eventName": "go", "x": 1},
        {"eventName": "Go"},
        {"eventName": 5},
        {"eventName": ["go"]},
        {"n": "go"},
        "go",
        None,
    ],
)
def test_an_event_matches_the_trigger_as_trigger_matches(api, org, make_automation, make_contact, config):
    from automations.models import Automation
    from automations.triggers import trigger_matches

    automation = make_automation(
        [NOW_STEP], trigger_type="event_received", trigger_config={"eventName": "go"}, status="active"
    )
    make_contact("a@example.com")
    make_contact("b@example.com")
    api.post("/events", {"email": "a@example.com", "eventName": "go"})
    Automation.objects.filter(pk=automation.pk).update(trigger_config=config)
    answer = api.post("/events", {"email": "b@example.com", "eventName": "go"}).json()["data"]
    expected = int(trigger_matches("event_received", config, {"eventName": "go"})[0])
    assert answer["triggeredAutomations"] == expected
    assert AutomationRun.objects.filter(contact__email="b@example.com").count() == expected


def test_without_a_broker_row_wake_up_the_contact_is_still_read(
    api, org, make_automation, make_contact, settings
):
    # without the walker's wake-up as a broker row (here the duplicate-delivery switch, as with Redis) an
    # existing contact is found and its run opened
    make_automation(
        [NOW_STEP], trigger_type="event_received", trigger_config={"eventName": "go"}, status="active"
    )
    make_contact("a@example.com")
    make_contact("b@example.com")
    api.post("/events", {"email": "a@example.com", "eventName": "go"})
    settings.OWLAT_TEST_DELIVER_TWICE = True
    r = api.post("/events", {"email": "b@example.com", "eventName": "go"})
    assert r.status_code == 201, r.content
    assert r.json()["data"]["triggeredAutomations"] == 1
