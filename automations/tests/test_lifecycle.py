"""AUT-06 … AUT-14: every edge, refusal reason and message, self-loop, preconditions, patches and effects."""

from __future__ import annotations

import datetime as dt

import pytest
from django.utils import timezone

from automations import lifecycle
from automations.lifecycle import (
    LEGAL_EDGES,
    PUBLIC_ACTIONS,
    automation_activate,
    automation_pause,
    automation_reduce,
    automation_resume,
    automation_revert_to_draft,
    automation_transition,
)
from automations.models import Automation, AutomationStep
from automations.tests.conftest import DELAY_1H
from owlat.models import AuditLog, OrganizationSettings
from owlat.permissions import Authority
from testsupport.race import race

STATES = ("draft", "active", "paused")
EXPECTED_EDGES = {("draft", "active"), ("active", "paused"), ("paused", "active"), ("paused", "draft")}


@pytest.fixture
def captured(monkeypatch):
    events = []
    import owlat.analytics

    monkeypatch.setattr(
        owlat.analytics,
        "capture",
        lambda *, distinct_id, event, properties=None: events.append((distinct_id, event, properties)),
    )
    return events


def _audits(automation):
    return list(
        AuditLog.objects.filter(resource="automation", resource_id=str(automation.pk))
        .order_by("created_at")
        .values_list("action", "user_id", "details")
    )


def test_graph_is_exactly_the_four_legal_edges():
    assert LEGAL_EDGES == EXPECTED_EDGES


@pytest.mark.parametrize(
    ("frm", "to", "audit_action", "event"),
    [
        ("draft", "active", "automation.activated", "automation_activated"),
        ("active", "paused", "automation.paused", "automation_paused"),
        ("paused", "active", "automation.resumed", "automation_resumed"),
        ("paused", "draft", "automation.reverted_to_draft", "automation_reverted_to_draft"),
    ],
)
def test_every_legal_edge_transitions_with_one_audit_row_and_one_analytics_event(
    make_automation, captured, frm, to, audit_action, event
):
    automation = make_automation([DELAY_1H], status=frm)
    before = len(_audits(automation))
    captured.clear()

    outcome = automation_transition(automation_id=automation.pk, to=to, actor="user-42")

    assert outcome.ok and outcome.applied == "transitioned"
    assert (outcome.from_state, outcome.to_state, outcome.object_id) == (frm, to, automation.pk)
    automation.refresh_from_db()
    assert automation.status == to
    audits = _audits(automation)[before:]
    assert audits == [
        (audit_action, "user-42", {"previousStatus": frm, "newStatus": to, "applied": "transitioned"})
    ]
    assert captured == [("user-42", event, {"automationId": str(automation.pk)})]


@pytest.mark.parametrize(
    ("frm", "to"), [(f, t) for f in STATES for t in STATES if f != t and (f, t) not in EXPECTED_EDGES]
)
def test_every_illegal_edge_is_refused_without_a_write(make_automation, captured, frm, to):
    automation = make_automation([DELAY_1H], status=frm)
    before = len(_audits(automation))
    captured.clear()

    outcome = automation_transition(automation_id=automation.pk, to=to, actor="user-1")

    assert not outcome.ok
    assert outcome.reason == "illegal_edge"
    assert outcome.message == "Automation is not in a state that allows this transition"
    automation.refresh_from_db()
    assert automation.status == frm
    assert len(_audits(automation)) == before
    assert captured == []


def test_active_to_draft_is_illegal_edge(make_automation):
    automation = make_automation([DELAY_1H], status="active")
    assert automation_transition(automation_id=automation.pk, to="draft", actor="u").reason == "illegal_edge"


@pytest.mark.parametrize(
    ("state", "action"),
    [
        ("active", "automation.activated"),
        ("paused", "automation.paused"),
        ("draft", "automation.reverted_to_draft"),
    ],
)
def test_self_loop_is_recorded_with_one_no_op_audit_row_and_no_patch_or_analytics(
    make_automation, captured, state, action
):
    automation = make_automation([DELAY_1H], status=state)
    before_row = Automation.objects.values().get(pk=automation.pk)
    before = len(_audits(automation))
    captured.clear()

    outcome = automation_transition(automation_id=automation.pk, to=state, actor="user-7")

    assert outcome.ok and outcome.applied == "recorded"
    assert (outcome.from_state, outcome.to_state) == (state, state)
    assert Automation.objects.values().get(pk=automation.pk) == before_row
    assert _audits(automation)[before:] == [
        (
            action,
            "user-7",
            {"previousStatus": state, "newStatus": state, "applied": "recorded", "no_op": True},
        )
    ]
    assert captured == []


def test_unknown_automation_is_automation_not_found(org):
    import uuid

    outcome = automation_transition(automation_id=uuid.uuid4(), to="active", actor="u")
    assert (outcome.ok, outcome.reason, outcome.message) == (
        False,
        "automation_not_found",
        "Automation not found",
    )


def test_automation_of_another_organization_is_not_found(make_automation):
    from owlat.organizations import organization_create

    other = organization_create(name="Other")
    automation = make_automation([DELAY_1H])
    outcome = automation_activate(
        automation_id=automation.pk, organization_id=other.pk, actor="u", authority=Authority.member("owner")
    )
    assert outcome.reason == "automation_not_found"


@pytest.mark.parametrize("frm", ["draft", "paused"])
def test_activation_without_steps_is_no_steps(make_automation, frm):
    automation = make_automation([DELAY_1H], status=frm)
    AutomationStep.objects.filter(automation=automation).delete()

    outcome = automation_transition(automation_id=automation.pk, to="active", actor="u")

    assert (outcome.ok, outcome.reason) == (False, "no_steps")
    assert outcome.message == "Automation must have at least one step to be activated"
    automation.refresh_from_db()
    assert automation.status == frm


def test_resume_after_last_step_was_deleted_stays_paused(make_automation):
    # Given a paused automation whose last step was deleted
    automation = make_automation([DELAY_1H], status="paused")
    AutomationStep.objects.filter(automation=automation).delete()
    # when an admin resumes it
    outcome = automation_resume(
        automation_id=automation.pk,
        organization_id=automation.organization_id,
        actor="u",
        authority=Authority.member("admin"),
    )
    # then the outcome is no_steps and the status stays paused
    assert outcome.reason == "no_steps"
    automation.refresh_from_db()
    assert automation.status == "paused"


@pytest.mark.parametrize(
    ("trigger_type", "config"),
    [
        ("contact_updated", None),
        ("contact_updated", {}),
        ("event_received", None),
        ("event_received", {"eventName": 5}),
        ("topic_subscribed", {"topicId": ""}),
    ],
)
@pytest.mark.parametrize("frm", ["draft", "paused"])
def test_activation_with_missing_trigger_config_is_invalid_trigger_config(
    make_automation, trigger_type, config, frm
):
    automation = make_automation(
        [DELAY_1H],
        trigger_type=trigger_type,
        trigger_config={"eventName": "x", "propertyKey": "email", "topicId": "t"},
        status=frm,
    )
    Automation.objects.filter(pk=automation.pk).update(trigger_config=config)

    outcome = automation_transition(automation_id=automation.pk, to="active", actor="u")

    assert (outcome.ok, outcome.reason) == (False, "invalid_trigger_config")
    assert outcome.message == "Automation trigger is missing required configuration"


def test_no_steps_is_checked_before_trigger_config(make_automation):
    automation = make_automation([], trigger_type="event_received")
    outcome = automation_transition(automation_id=automation.pk, to="active", actor="u")
    assert outcome.reason == "no_steps"


def test_contact_created_needs_no_trigger_config(make_automation):
    automation = make_automation([DELAY_1H], trigger_type="contact_created")
    assert automation_transition(automation_id=automation.pk, to="active", actor="u").ok


def test_preconditions_are_not_checked_on_a_self_loop(make_automation):
    automation = make_automation([DELAY_1H], status="active")
    AutomationStep.objects.filter(automation=automation).delete()
    outcome = automation_transition(automation_id=automation.pk, to="active", actor="u")
    assert outcome.ok and outcome.applied == "recorded"


def test_patches_per_target(make_automation):
    t0 = timezone.now().replace(microsecond=0)
    automation = make_automation([DELAY_1H])
    Automation.objects.filter(pk=automation.pk).update(consecutive_run_failures=3)

    automation_transition(automation_id=automation.pk, to="active", actor="u", at=t0)
    automation.refresh_from_db()
    assert (automation.activated_at, automation.paused_at, automation.consecutive_run_failures) == (
        t0,
        None,
        0,
    )

    t1 = t0 + dt.timedelta(hours=1)
    automation_transition(automation_id=automation.pk, to="paused", actor="u", at=t1)
    automation.refresh_from_db()
    assert (automation.activated_at, automation.paused_at) == (t0, t1)

    # resume keeps the first activation time, clears paused_at and resets the breaker counter
    Automation.objects.filter(pk=automation.pk).update(consecutive_run_failures=5)
    t2 = t1 + dt.timedelta(hours=1)
    automation_transition(automation_id=automation.pk, to="active", actor="u", at=t2)
    automation.refresh_from_db()
    assert (automation.activated_at, automation.paused_at, automation.consecutive_run_failures) == (
        t0,
        None,
        0,
    )

    automation_transition(automation_id=automation.pk, to="paused", actor="u", at=t2)
    updated_before = Automation.objects.get(pk=automation.pk).updated_at
    automation_transition(automation_id=automation.pk, to="draft", actor="u", at=t2)
    automation.refresh_from_db()
    assert (automation.status, automation.activated_at, automation.paused_at) == ("draft", None, None)
    assert automation.updated_at >= updated_before


def test_lifecycle_never_touches_counters(make_automation):
    automation = make_automation([DELAY_1H])
    Automation.objects.filter(pk=automation.pk).update(stats_entered=7, stats_completed=2, stats_cancelled=1)
    automation_transition(automation_id=automation.pk, to="active", actor="u")
    automation_transition(automation_id=automation.pk, to="paused", actor="u")
    automation.refresh_from_db()
    assert (automation.stats_entered, automation.stats_completed, automation.stats_cancelled) == (7, 2, 1)
    assert automation.stats_active == 4


def test_reducer_is_pure_and_decides_without_a_database():
    at = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
    d = automation_reduce(
        frm="draft",
        to="active",
        automation_id="a",
        step_count=1,
        trigger_type="contact_created",
        trigger_config=None,
        at=at,
    )
    assert d.ok and d.patch == {
        "status": "active",
        "paused_at": None,
        "consecutive_run_failures": 0,
        "activated_at": at,
    }
    d = automation_reduce(
        frm="paused",
        to="active",
        automation_id="a",
        step_count=0,
        trigger_type="contact_created",
        trigger_config=None,
        at=at,
    )
    assert d.reason == "no_steps"
    d = automation_reduce(
        frm="active",
        to="draft",
        automation_id="a",
        step_count=1,
        trigger_type="contact_created",
        trigger_config=None,
        at=at,
    )
    assert d.reason == "illegal_edge"


# --- public actions (AUT-13) ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("fn", "frm", "to"),
    [
        (automation_activate, "draft", "active"),
        (automation_pause, "active", "paused"),
        (automation_resume, "paused", "active"),
        (automation_revert_to_draft, "paused", "draft"),
    ],
)
def test_public_actions_call_the_lifecycle(make_automation, fn, frm, to):
    automation = make_automation([DELAY_1H], status=frm)
    outcome = fn(
        automation_id=automation.pk,
        organization_id=automation.organization_id,
        actor="u",
        authority=Authority.member("owner"),
    )
    assert outcome.ok and outcome.to_state == to


@pytest.mark.parametrize(
    ("fn", "verb"),
    [
        (automation_activate, "activate"),
        (automation_pause, "pause"),
        (automation_resume, "resume"),
        (automation_revert_to_draft, "revert to draft"),
    ],
)
def test_editors_may_not_change_the_status(make_automation, fn, verb):
    automation = make_automation([DELAY_1H])
    outcome = fn(
        automation_id=automation.pk,
        organization_id=automation.organization_id,
        actor="u",
        authority=Authority.member("editor"),
    )
    assert (outcome.ok, outcome.reason) == (False, "forbidden")
    assert outcome.message == f"Only owners and admins can {verb} automations"
    automation.refresh_from_db()
    assert automation.status == "draft"


def test_public_actions_respect_the_feature_flag(make_automation):
    automation = make_automation([DELAY_1H])
    OrganizationSettings.objects.filter(organization_id=automation.organization_id).update(
        feature_flags={"automations": False}
    )
    outcome = automation_activate(
        automation_id=automation.pk,
        organization_id=automation.organization_id,
        actor="u",
        authority=Authority.member("owner"),
    )
    assert (outcome.ok, outcome.reason) == (False, "feature_disabled")
    assert "automations" in outcome.message
    automation.refresh_from_db()
    assert automation.status == "draft"


# --- breaker pause (AUT-27) -------------------------------------------------------------------------------


def test_breaker_pause_is_audited_and_tracked_as_the_breaker_actor(make_automation, captured):
    automation = make_automation([DELAY_1H], status="active")
    captured.clear()
    for _ in range(4):
        assert lifecycle.automation_record_run_failure(automation.pk) is False
    assert lifecycle.automation_record_run_failure(automation.pk) is True
    automation.refresh_from_db()
    assert automation.status == "paused"
    assert _audits(automation)[-1][:2] == ("automation.paused", "system:automation-breaker")
    assert captured == [
        ("system:automation-breaker", "automation_paused", {"automationId": str(automation.pk)})
    ]


# --- racing callers ----------------------------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_two_racing_activations_one_transitions_the_other_records(make_automation):
    automation = make_automation([DELAY_1H])
    results = race(
        lambda _: automation_transition(automation_id=automation.pk, to="active", actor="u").applied
    )
    assert sorted(results) == ["recorded", "transitioned"]
    assert AuditLog.objects.filter(resource_id=str(automation.pk), action="automation.activated").count() == 2


def test_only_the_lifecycle_module_writes_automation_status():
    """Source scan: no other module of the app calls the transitions or updates `status` directly."""
    import pathlib
    import re

    root = pathlib.Path(lifecycle.__file__).parent
    offenders = []
    pattern = re.compile(
        r"\.(activate|pause|resume|revert_to_draft|complete|cancel|fail|claim)\(\{|update\([^)]*\bstatus="
    )
    for path in root.rglob("*.py"):
        if "tests" in path.parts or "migrations" in path.parts or path.name == "lifecycle.py":
            continue
        if pattern.search(path.read_text()):
            offenders.append(str(path))
    assert offenders == []


# --- the permission check cannot be skipped by omission (issue 13 item 10) ------------------------------------


@pytest.mark.parametrize(
    "fn", [automation_activate, automation_pause, automation_resume, automation_revert_to_draft]
)
def test_an_action_without_authority_does_not_run(make_automation, fn):
    automation = make_automation([DELAY_1H], status="paused")
    with pytest.raises(TypeError):
        fn(automation_id=automation.pk, organization_id=automation.organization_id, actor="u")
    for not_an_authority in (None, "owner", {"role": "owner"}):
        with pytest.raises(TypeError):
            fn(
                automation_id=automation.pk,
                organization_id=automation.organization_id,
                actor="u",
                authority=not_an_authority,
            )
    automation.refresh_from_db()
    assert automation.status == "paused"


@pytest.mark.parametrize("role", [None, "", "editor", "viewer", "superuser"])
def test_a_member_without_a_managing_role_is_refused(make_automation, role):
    automation = make_automation([DELAY_1H])
    outcome = automation_activate(
        automation_id=automation.pk,
        organization_id=automation.organization_id,
        actor="u",
        authority=Authority.member(role),
    )
    assert (outcome.ok, outcome.reason) == (False, "forbidden")


@pytest.mark.parametrize(
    "authority",
    [
        Authority.api_key("automations:write"),
        Authority.operator(),
        Authority.platform_staff(),
        Authority.system("t"),
    ],
)
def test_named_upstream_grants_are_allowed(make_automation, authority):
    automation = make_automation([DELAY_1H])
    outcome = automation_activate(
        automation_id=automation.pk,
        organization_id=automation.organization_id,
        actor="u",
        authority=authority,
    )
    assert outcome.ok and outcome.to_state == "active"


def test_every_public_action_requires_an_authority():
    import inspect

    for verb, fn in PUBLIC_ACTIONS.items():
        parameter = inspect.signature(fn).parameters["authority"]
        assert parameter.kind is inspect.Parameter.KEYWORD_ONLY, verb
        assert parameter.default is inspect.Parameter.empty, verb
