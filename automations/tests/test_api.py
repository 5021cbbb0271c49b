"""API-21 (events, AUT-30) and API-27/28 (automations, steps, transitions, runs, stats)."""

from __future__ import annotations

import re

import pytest

from automations.lifecycle import automation_transition
from automations.models import Automation, AutomationRun
from automations.tests.conftest import DELAY_1H
from owlat.models import AuditLog, ContactActivity, Event, OrganizationSettings, Topic
from testsupport.api import ApiClient, error_of, make_key

ALL = [
    "contacts:read",
    "contacts:write",
    "events:write",
    "automations:read",
    "automations:write",
    "topics:manage",
]
TS = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")
COND = {"kind": "contact_property", "field": "plan", "operator": "equals", "value": "pro"}


@pytest.fixture
def api(org):
    _, raw = make_key(org, scopes=ALL)
    return ApiClient(raw)


@pytest.fixture(autouse=True)
def _no_rate_limit(settings):
    settings.API_RATE_LIMIT_PER_SECOND = 10_000
    settings.API_RATE_LIMIT_BURST = 10_000


# --- events (AUT-30, API-21, API-35 item 9) ----------------------------------------------------------------


def test_api35_item_9(api, org):
    r = api.post("/events", {"email": "new@example.com", "eventName": "signup"})
    assert r.status_code == 404
    assert r.json() == {
        "error": {
            "category": "not_found",
            "message": 'Contact with email "new@example.com" not found. Set createContactIfNotExists: true to '
            "create the contact automatically.",
        }
    }
    r = api.post(
        "/events", {"email": "new@example.com", "eventName": "signup", "createContactIfNotExists": True}
    )
    assert r.status_code == 201
    data = r.json()["data"]
    assert set(data) == {"eventId", "contactId", "eventName", "triggeredAutomations", "contactCreated"}
    assert re.fullmatch(r"evt_[0-9a-z]+[0-9a-z]{8}", data["eventId"])
    assert (data["eventName"], data["triggeredAutomations"], data["contactCreated"]) == ("signup", 0, True)
    r = api.post("/events", {"email": "new@example.com", "eventName": "1bad"})
    assert r.status_code == 400
    assert error_of(r)["category"] == "invalid_input"


def test_missing_scope_is_403(org):
    _, raw = make_key(org, scopes=["contacts:read"])
    r = ApiClient(raw).post("/events", {"email": "a@example.com", "eventName": "x"})
    assert r.status_code == 403
    assert error_of(r)["message"] == "This API key is missing the required scope: events:write"


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (None, "Invalid JSON in request body"),
        ({}, "email is required"),
        ({"email": 5, "eventName": "x"}, "email must be a string"),
        ({"email": "nope", "eventName": "x"}, "Invalid email format"),
        ({"email": "a@example.com"}, "eventName is required"),
        ({"email": "a@example.com", "eventName": 3}, "eventName must be a string"),
        (
            {"email": "a@example.com", "eventName": "has space"},
            "eventName must start with a letter and contain only alphanumeric characters, underscores, or hyphens "
            "(max 100 chars)",
        ),
        (
            {"email": "a@example.com", "eventName": "a" * 101},
            "eventName must start with a letter and contain only alphanumeric characters, underscores, or hyphens "
            "(max 100 chars)",
        ),
        (
            {"email": "a@example.com", "eventName": "x", "eventProperties": [1]},
            "eventProperties must be an object",
        ),
        (
            {"email": "a@example.com", "eventName": "x", "eventProperties": {"a": {"b": 1}}},
            "eventProperties values must be strings, numbers, booleans or null",
        ),
        (
            {"email": "a@example.com", "eventName": "x", "createContactIfNotExists": "yes"},
            "createContactIfNotExists must be a boolean",
        ),
    ],
)
def test_event_validation_messages(api, body, message):
    r = api.post("/events", body) if body is not None else api.post("/events", raw=b"{not json")
    assert r.status_code == 400
    assert error_of(r)["message"] == message


def test_event_is_stored_with_its_activity_and_fans_out(api, org, make_automation, contact):
    automation = make_automation(
        [DELAY_1H], status="active", trigger_type="event_received", trigger_config={"eventName": "paid"}
    )
    make_automation(
        [DELAY_1H], status="active", trigger_type="event_received", trigger_config={"eventName": "Paid"}
    )
    r = api.post(
        "/events/",
        {
            "email": "JANE@example.com",
            "eventName": "paid",
            "eventProperties": {"plan": "pro", "n": 2, "x": None},
        },
    )
    assert r.status_code == 201, r.content
    data = r.json()["data"]
    assert (data["contactId"], data["triggeredAutomations"], data["contactCreated"]) == (
        str(contact.pk),
        1,
        False,
    )
    event = Event.objects.get(pk=data["eventId"])
    assert (event.contact_id, event.event_name, event.properties, event.triggered_automations) == (
        contact.pk,
        "paid",
        {"plan": "pro", "n": 2, "x": None},
        1,
    )
    activity = ContactActivity.objects.get(contact=contact, activity_type="event_received")
    assert activity.metadata["eventId"] == event.pk
    run = AutomationRun.objects.get(automation=automation)
    assert run.trigger_data == {"eventName": "paid", "eventProperties": '{"n":2,"plan":"pro","x":null}'}


def test_triggered_automations_does_not_count_contact_created_runs(api, make_automation):
    make_automation([DELAY_1H], status="active")  # contact_created
    make_automation(
        [DELAY_1H], status="active", trigger_type="event_received", trigger_config={"eventName": "signup"}
    )
    r = api.post(
        "/events", {"email": "fresh@example.com", "eventName": "signup", "createContactIfNotExists": True}
    )
    assert r.json()["data"]["triggeredAutomations"] == 1
    assert AutomationRun.objects.count() == 2
    # contact_created fired first
    assert list(AutomationRun.objects.order_by("started_at").values_list("triggered_by", flat=True)) == [
        "contact_created",
        "event_received",
    ]


def test_event_idempotency_key_replays_without_a_second_event(api, contact):
    body = {"email": "jane@example.com", "eventName": "signup"}
    first = api.post("/events", body, headers={"Idempotency-Key": "k1"})
    second = api.post("/events", body, headers={"Idempotency-Key": "k1"})
    assert first.status_code == second.status_code == 201
    assert first.json() == second.json()
    assert second["Idempotent-Replayed"] == "true"
    assert Event.objects.count() == 1


# --- automations CRUD (API-27) ------------------------------------------------------------------------------


def _create(api, **extra):
    body = {"name": "Welcome", "triggerType": "contact_created", **extra}
    r = api.post("/automations", body)
    assert r.status_code == 201, r.content
    return r.json()["data"]


def test_create_get_and_list(api, org):
    data = _create(
        api,
        description="hi",
        steps=[
            {"stepType": "delay", "config": {"duration": 2, "unit": "days"}},
            {
                "stepType": "condition",
                "config": {"condition": {**COND, "operator": "greater_than"}, "yesBranchStepIndex": 0},
            },
        ],
    )
    assert set(data) == {
        "id",
        "name",
        "description",
        "triggerType",
        "triggerConfig",
        "status",
        "stats",
        "consecutiveRunFailures",
        "unsubscribeFooter",
        "trackEngagement",
        "activatedAt",
        "pausedAt",
        "createdAt",
        "updatedAt",
        "steps",
    }
    assert data["status"] == "draft"
    assert data["stats"] == {"entered": 0, "active": 0, "completed": 0, "cancelled": 0}
    assert TS.match(data["createdAt"]) and data["activatedAt"] is None
    assert [(s["stepIndex"], s["stepType"]) for s in data["steps"]] == [(0, "delay"), (1, "condition")]
    # editor aliases are stored canonically; a missing branch is null
    assert data["steps"][1]["config"] == {
        "condition": {**COND, "operator": "gt"},
        "yesBranchStepIndex": 0,
        "noBranchStepIndex": None,
    }
    assert AuditLog.objects.filter(action="automation.created", resource_id=data["id"]).exists()

    assert api.get(f"/automations/{data['id']}").json()["data"] == data
    listed = api.get("/automations?status=draft").json()
    assert listed["pagination"]["totalItems"] == 1
    assert listed["data"][0]["stepCount"] == 2 and "steps" not in listed["data"][0]
    assert api.get("/automations?status=active").json()["data"] == []
    assert api.get("/automations?status=bogus").status_code == 400
    assert api.get("/automations?triggerType=event_received").json()["data"] == []
    assert len(api.get("/automations?search=welc").json()["data"]) == 1


@pytest.mark.parametrize(
    ("body", "message", "field"),
    [
        ({"triggerType": "contact_created"}, "name is required", "name"),
        ({"name": "x"}, "triggerType is required", "triggerType"),
        ({"name": "x", "triggerType": "nope"}, None, "triggerType"),
        (
            {"name": "x", "triggerType": "contact_created", "status": "active"},
            "status is read-only",
            "status",
        ),
        (
            {"name": "x", "triggerType": "event_received", "triggerConfig": {"eventName": 4}},
            None,
            "triggerConfig.eventName",
        ),
        (
            {
                "name": "x",
                "triggerType": "contact_created",
                "steps": [{"stepType": "delay", "config": {"duration": 0, "unit": "days"}}],
            },
            None,
            "steps[0].config.duration",
        ),
        (
            {
                "name": "x",
                "triggerType": "contact_created",
                "steps": [{"stepType": "delay", "config": {"duration": 1, "unit": "years"}}],
            },
            None,
            "steps[0].config.unit",
        ),
        (
            {"name": "x", "triggerType": "contact_created", "steps": [{"stepType": "email", "config": {}}]},
            "No email template configured",
            "steps[0].config.emailTemplateId",
        ),
        (
            {
                "name": "x",
                "triggerType": "contact_created",
                "steps": [
                    {
                        "stepType": "condition",
                        "config": {
                            "condition": {"kind": "contact_property", "field": "a", "operator": "nope"}
                        },
                    }
                ],
            },
            None,
            "steps[0].config.condition.operator",
        ),
        (
            {"name": "x", "triggerType": "contact_created", "steps": [{"stepType": "sms", "config": {}}]},
            None,
            "steps[0].stepType",
        ),
    ],
)
def test_create_validation(api, body, message, field):
    r = api.post("/automations", body)
    assert r.status_code == 400, r.content
    err = error_of(r)
    assert err["data"]["field"] == field
    if message:
        assert err["message"] == message


def test_feature_flag_gates_automations(api, org):
    OrganizationSettings.objects.filter(organization=org).update(feature_flags={"automations": False})
    r = api.get("/automations")
    assert r.status_code == 403
    assert "automations" in error_of(r)["message"]


def test_scopes(org, make_automation):
    automation = make_automation([DELAY_1H])
    _, raw = make_key(org, scopes=["automations:read"])
    reader = ApiClient(raw)
    assert reader.get(f"/automations/{automation.pk}").status_code == 200
    r = reader.post(f"/automations/{automation.pk}/activate")
    assert r.status_code == 403
    assert error_of(r)["message"] == "This API key is missing the required scope: automations:write"


def test_ids_of_other_organizations_are_not_found(api, make_automation):
    from owlat.organizations import organization_create

    other = make_automation([DELAY_1H], organization=organization_create(name="Other"))
    assert api.get(f"/automations/{other.pk}").status_code == 404
    assert error_of(api.get(f"/automations/{other.pk}"))["message"] == "Automation not found"
    assert error_of(api.get("/automations/not-a-uuid"))["message"] == "Invalid automation ID format"


def test_update_name_any_state_trigger_only_in_draft(api, make_automation):
    automation = make_automation([DELAY_1H], status="active")
    r = api.patch(f"/automations/{automation.pk}", {"name": "Renamed", "description": "d"})
    assert r.status_code == 200 and r.json()["data"]["name"] == "Renamed"
    r = api.put(
        f"/automations/{automation.pk}",
        {"triggerType": "event_received", "triggerConfig": {"eventName": "x"}},
    )
    assert r.status_code == 422
    assert error_of(r) == {
        "category": "invalid_state",
        "message": "Cannot update trigger on active or paused automations",
        "data": {"reason": "not_draft"},
    }
    assert api.put(f"/automations/{automation.pk}", {"stats": {}}).status_code == 400


def test_delete_refused_while_active(api, make_automation):
    automation = make_automation([DELAY_1H], status="active")
    r = api.delete(f"/automations/{automation.pk}")
    assert r.status_code == 422
    assert error_of(r)["message"] == "Cannot delete active automations. Please pause first."
    assert error_of(r)["data"]["reason"] == "automation_active"
    automation_transition(automation_id=automation.pk, to="paused", actor="u")
    r = api.delete(f"/automations/{automation.pk}")
    assert r.json() == {"data": {"id": str(automation.pk), "deleted": True}}
    assert not Automation.objects.filter(pk=automation.pk).exists()


def test_duplicate(api, make_automation):
    automation = make_automation([DELAY_1H, DELAY_1H], status="active", name="Drip")
    r = api.post(f"/automations/{automation.pk}/duplicate")
    assert r.status_code == 201
    data = r.json()["data"]
    assert (data["name"], data["status"], len(data["steps"])) == ("Drip (Copy)", "draft", 2)
    assert data["stats"]["entered"] == 0


# --- steps ---------------------------------------------------------------------------------------------------


def test_step_edits_remap_branches_and_are_draft_only(api):
    data = _create(
        api,
        steps=[
            {"stepType": "delay", "config": {"duration": 1, "unit": "hours"}},
            {
                "stepType": "condition",
                "config": {"condition": COND, "yesBranchStepIndex": 2, "noBranchStepIndex": 0},
            },
            {"stepType": "delay", "config": {"duration": 2, "unit": "hours"}},
        ],
    )
    aid = data["id"]
    # insert at 0: every index moves up, branches follow their steps
    r = api.post(
        f"/automations/{aid}/steps",
        {"stepType": "delay", "config": {"duration": 5, "unit": "minutes"}, "stepIndex": 0},
    )
    assert r.status_code == 201
    steps = r.json()["data"]["steps"]
    assert [s["stepIndex"] for s in steps] == [0, 1, 2, 3]
    assert steps[2]["config"]["yesBranchStepIndex"] == 3 and steps[2]["config"]["noBranchStepIndex"] == 1
    # reorder: move the last delay to the front
    ids = [s["id"] for s in steps]
    r = api.post(f"/automations/{aid}/steps/reorder", {"stepIds": [ids[3], ids[0], ids[1], ids[2]]})
    assert r.status_code == 200
    steps = r.json()["data"]["steps"]
    assert [s["id"] for s in steps] == [ids[3], ids[0], ids[1], ids[2]]
    assert (steps[3]["config"]["yesBranchStepIndex"], steps[3]["config"]["noBranchStepIndex"]) == (0, 2)
    assert api.post(f"/automations/{aid}/steps/reorder", {"stepIds": ids[:3]}).status_code == 400
    # removing the yes target nulls the branch; the no target shifts
    r = api.delete(f"/automations/{aid}/steps/{ids[3]}")
    steps = r.json()["data"]["steps"]
    assert [s["stepIndex"] for s in steps] == [0, 1, 2]
    assert (steps[2]["config"]["yesBranchStepIndex"], steps[2]["config"]["noBranchStepIndex"]) == (None, 1)
    # update a step
    r = api.patch(f"/automations/{aid}/steps/{ids[0]}", {"config": {"duration": 3, "unit": "weeks"}})
    assert r.status_code == 200
    assert r.json()["data"]["steps"][0]["config"] == {"duration": 3, "unit": "weeks"}
    assert (
        api.patch(
            f"/automations/{aid}/steps/{ids[0]}", {"config": {"duration": -1, "unit": "weeks"}}
        ).status_code
        == 400
    )

    # not in draft: every structural verb is refused with its message
    assert api.post(f"/automations/{aid}/activate").status_code == 200
    for method, path, body, verb in [
        (
            "post",
            f"/automations/{aid}/steps",
            {"stepType": "delay", "config": {"duration": 1, "unit": "days"}},
            "added",
        ),
        (
            "patch",
            f"/automations/{aid}/steps/{ids[0]}",
            {"config": {"duration": 1, "unit": "days"}},
            "edited",
        ),
        ("post", f"/automations/{aid}/steps/reorder", {"stepIds": [ids[0], ids[1], ids[2]]}, "reordered"),
        ("delete", f"/automations/{aid}/steps/{ids[0]}", None, "removed"),
    ]:
        r = getattr(api, method)(path, body) if body is not None else getattr(api, method)(path)
        assert r.status_code == 422, (verb, r.content)
        assert error_of(r)["message"] == f"Steps can only be {verb} while the automation is a draft"
        assert error_of(r)["data"]["reason"] == "not_draft"


def test_an_end_step_takes_no_config_and_a_delay_still_requires_one(api):
    """End has no settings: it is added with no `config` or an empty one; a kind with settings names `config`
    when it is left out."""
    aid = _create(api)["id"]
    assert api.post(f"/automations/{aid}/steps", {"stepType": "end"}).status_code == 201
    r = api.post(f"/automations/{aid}/steps", {"stepType": "end", "config": {}})
    assert r.status_code == 201
    assert [s["stepType"] for s in r.json()["data"]["steps"]] == ["end", "end"]
    assert [s["config"] for s in r.json()["data"]["steps"]] == [{}, {}]
    r = api.post(f"/automations/{aid}/steps", {"stepType": "delay"})
    assert r.status_code == 400
    assert error_of(r)["data"]["field"] == "config"
    assert error_of(r)["message"] == "config is required"


# --- transitions --------------------------------------------------------------------------------------------


def test_transitions_and_refusals(api):
    aid = _create(api)["id"]
    r = api.post(f"/automations/{aid}/activate")
    assert r.status_code == 422
    assert error_of(r) == {
        "category": "invalid_state",
        "message": "Automation must have at least one step to be activated",
        "data": {"reason": "no_steps", "from": "draft", "to": "active"},
    }
    api.post(f"/automations/{aid}/steps", {"stepType": "delay", "config": {"duration": 1, "unit": "days"}})
    r = api.post(f"/automations/{aid}/activate/")
    assert r.status_code == 200
    body = r.json()
    assert body["transition"] == {"applied": "transitioned", "from": "draft", "to": "active"}
    assert body["data"]["status"] == "active" and TS.match(body["data"]["activatedAt"])
    assert api.post(f"/automations/{aid}/activate").json()["transition"]["applied"] == "recorded"
    assert error_of(api.post(f"/automations/{aid}/revert-to-draft"))["data"]["reason"] == "illegal_edge"
    assert api.post(f"/automations/{aid}/pause").json()["data"]["status"] == "paused"
    assert api.post(f"/automations/{aid}/resume").json()["transition"]["to"] == "active"
    api.post(f"/automations/{aid}/pause")
    assert api.post(f"/automations/{aid}/revert-to-draft").json()["data"]["status"] == "draft"
    audit = AuditLog.objects.filter(resource_id=aid, action="automation.activated").first()
    assert audit.user_id.startswith("api_key:")


def test_invalid_trigger_config_refusal(api):
    aid = _create(
        api,
        triggerType="event_received",
        steps=[{"stepType": "delay", "config": {"duration": 1, "unit": "days"}}],
    )["id"]
    r = api.post(f"/automations/{aid}/activate")
    assert error_of(r)["message"] == "Automation trigger is missing required configuration"
    assert error_of(r)["data"]["reason"] == "invalid_trigger_config"


# --- runs and stats (API-28) --------------------------------------------------------------------------------


def test_runs_step_runs_and_stats(api, make_automation, contact, make_contact):
    from testsupport import drain_queue

    automation = make_automation(
        [
            ("condition", {"condition": COND, "yesBranchStepIndex": None, "noBranchStepIndex": 2}),
            DELAY_1H,
            DELAY_1H,
        ],
        status="active",
    )
    from automations.triggers import automation_fanout
    from owlat.registry import TriggerEvent

    [run_id] = automation_fanout(
        TriggerEvent("contact_created", str(contact.organization_id), str(contact.pk))
    )
    other = make_contact()
    automation_fanout(TriggerEvent("contact_created", str(other.organization_id), str(other.pk)))
    drain_queue()

    runs = api.get(f"/automations/{automation.pk}/runs").json()
    assert runs["pagination"]["totalItems"] == 2
    only = api.get(f"/automations/{automation.pk}/runs?contactId={contact.pk}").json()["data"]
    assert [r["id"] for r in only] == [run_id]
    assert set(only[0]) == {
        "id",
        "automationId",
        "contactId",
        "status",
        "currentStepIndex",
        "stepsExecuted",
        "triggeredBy",
        "triggerData",
        "startedAt",
        "completedAt",
        "nextStepAt",
    }
    assert (only[0]["status"], only[0]["currentStepIndex"], only[0]["stepsExecuted"]) == ("running", 2, 1)
    assert api.get(f"/automations/{automation.pk}/runs?status=completed").json()["data"] == []

    run = api.get(f"/automations/{automation.pk}/runs/{run_id}").json()["data"]
    assert run["id"] == run_id and TS.match(run["nextStepAt"])

    step_runs = api.get(f"/automations/{automation.pk}/runs/{run_id}/step-runs").json()["data"]
    assert [(s["stepIndex"], s["status"]) for s in step_runs] == [
        (0, "completed"),
        (1, "skipped"),
        (2, "pending"),
    ]
    assert {
        "id",
        "stepId",
        "stepIndex",
        "stepType",
        "status",
        "scheduledAt",
        "startedAt",
        "completedAt",
        "delayUntil",
        "emailSendId",
        "errorMessage",
        "retryCount",
    } <= set(step_runs[0])

    stats = api.get(f"/automations/{automation.pk}/stats").json()["data"]
    assert (stats["entered"], stats["active"], stats["completed"], stats["cancelled"]) == (2, 2, 0, 0)
    assert TS.match(stats["statsUpdatedAt"])
    assert [(f["stepIndex"], f["completed"], f["skipped"], f["pending"]) for f in stats["funnel"]] == [
        (0, 2, 0, 0),
        (1, 0, 2, 0),
        (2, 0, 0, 2),
    ]
    assert (
        api.get(f"/automations/{automation.pk}/runs/00000000-0000-0000-0000-000000000000").status_code == 404
    )


# --- in-use refusal for topics (API-25) ---------------------------------------------------------------------


def test_topic_referenced_by_a_live_automation_cannot_be_deleted(api, org, make_automation):
    topic = Topic.objects.create(organization=org, name="News")
    automation = make_automation(
        [
            (
                "condition",
                {"condition": {"kind": "topic_membership", "topicId": str(topic.pk), "operator": "equals"}},
            )
        ],
        status="active",
    )
    r = api.delete(f"/topics/{topic.pk}")
    assert r.status_code == 422
    assert error_of(r)["data"]["usedBy"] == [{"kind": "automation", "id": str(automation.pk)}]
    automation_transition(automation_id=automation.pk, to="paused", actor="u")
    automation_transition(automation_id=automation.pk, to="draft", actor="u")
    assert api.delete(f"/topics/{topic.pk}").status_code == 200


# --- references must exist in the organization (API-24) ----------------------------------------------------


def test_referenced_ids_must_exist_in_the_organization(api, org):
    from owlat.organizations import organization_create
    from templates.models import EmailTemplate

    other = organization_create(name="Other")
    foreign_template = EmailTemplate.objects.create(
        organization=other, name="X", subject="x", html_content="<p>x</p>"
    )
    foreign_topic = Topic.objects.create(organization=other, name="X")
    own_template = EmailTemplate.objects.create(
        organization=org, name="Mine", subject="s", html_content="<p>m</p>"
    )

    r = api.post(
        "/automations",
        {
            "name": "x",
            "triggerType": "contact_created",
            "steps": [{"stepType": "email", "config": {"emailTemplateId": str(foreign_template.pk)}}],
        },
    )
    assert r.status_code == 400
    assert (error_of(r)["message"], error_of(r)["data"]["field"]) == (
        "Email template not found",
        "steps[0].config.emailTemplateId",
    )
    r = api.post(
        "/automations",
        {"name": "x", "triggerType": "topic_subscribed", "triggerConfig": {"topicId": str(foreign_topic.pk)}},
    )
    assert (r.status_code, error_of(r)["data"]["field"]) == (400, "triggerConfig.topicId")
    aid = _create(api)["id"]
    r = api.post(
        f"/automations/{aid}/steps",
        {
            "stepType": "condition",
            "config": {
                "condition": {
                    "kind": "topic_membership",
                    "topicId": str(foreign_topic.pk),
                    "operator": "equals",
                }
            },
        },
    )
    assert (r.status_code, error_of(r)["data"]["field"]) == (400, "config.condition.topicId")
    r = api.post(
        f"/automations/{aid}/steps",
        {"stepType": "email", "config": {"emailTemplateId": str(own_template.pk), "subjectOverride": "Hi"}},
    )
    assert r.status_code == 201
    assert r.json()["data"]["steps"][0]["config"] == {
        "emailTemplateId": str(own_template.pk),
        "subjectOverride": "Hi",
    }


def test_template_used_by_an_email_step_cannot_be_deleted(org, api):
    from templates.models import EmailTemplate

    template = EmailTemplate.objects.create(
        organization=org, name="Mine", subject="s", html_content="<p>m</p>"
    )
    aid = _create(api, steps=[{"stepType": "email", "config": {"emailTemplateId": str(template.pk)}}])["id"]
    _, raw = make_key(org, scopes=["templates:write", "templates:read"])
    r = ApiClient(raw).delete(f"/templates/{template.pk}")
    assert r.status_code == 422
    assert error_of(r)["data"]["reason"] == "template_in_use"
    assert error_of(r)["data"]["usedBy"] == [{"kind": "automation", "id": aid}]


def test_the_event_serializer_reuses_its_fields_and_keeps_each_instance_apart():
    # issue 12: the declared fields are bound once per thread and handed to each instance; every instance
    # still validates and reports on its own data, and another thread gets its own fields
    import threading

    from automations.api.serializers import EventSerializer

    first = EventSerializer(data={"email": "a@example.com", "eventName": "go"})
    assert first.is_valid(), first.errors
    second = EventSerializer(data={"email": "b@example.com", "eventName": "1bad", "eventProperties": []})
    assert not second.is_valid()
    assert set(second.errors) == {"eventName", "eventProperties"}
    assert first.validated_data["email"] == "a@example.com"
    assert second.fields is first.fields
    assert all(field.parent is second for field in second.fields.values())
    third = EventSerializer(
        data={"email": "c@example.com", "eventName": "go", "createContactIfNotExists": True}
    )
    assert third.is_valid() and dict(third.validated_data) == {
        "email": "c@example.com",
        "eventName": "go",
        "createContactIfNotExists": True,
    }
    assert first.validated_data["createContactIfNotExists"] is False

    other = []
    thread = threading.Thread(target=lambda: other.append(EventSerializer(data={}).fields))
    thread.start()
    thread.join()
    assert other[0] is not first.fields
