"""Simulating an automation for a contact: the steps, conditions with the contact's values, branches, waits and
the mail each step would send — and nothing written or sent."""

from __future__ import annotations

import datetime as dt

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from automations.models import AutomationRun, AutomationStepRun
from automations.simulate import automation_simulate
from automations.tests.test_walker_email import email_step
from delivery.models import TransactionalSend
from owlat.models import BlockedEmail, ContactProperty, ContactPropertyValue

pytestmark = pytest.mark.usefixtures("local_email")

IS_PRO = {"kind": "contact_property", "field": "plan", "operator": "equals", "value": "pro"}
NOW = dt.datetime(2026, 12, 3, 9, 0, tzinfo=dt.UTC)


def _plan(contact, value):
    prop, _ = ContactProperty.objects.get_or_create(organization=contact.organization, key="plan")
    ContactPropertyValue.objects.create(
        organization=contact.organization, contact=contact, property=prop, value=value
    )


@pytest.fixture
def branching(make_automation, template):
    # 0: wait 2 days; 1: pro? yes → 2, no → 4; 2: mail; 3: end; 4: mail with its own subject
    return make_automation(
        [
            ("delay", {"duration": 2, "unit": "days"}),
            ("condition", {"condition": IS_PRO, "yesBranchStepIndex": 2, "noBranchStepIndex": 4}),
            email_step(template),
            ("end", {}),
            ("email", {"emailTemplateId": str(template.pk), "subjectOverride": "Try pro, {{firstName}}"}),
        ],
        status="active",
    )


def test_two_contacts_take_their_own_branch_and_nothing_is_written(branching, make_contact):
    pro = make_contact("pro@example.com", first_name="Pia")
    free = make_contact("free@example.com", first_name="Fred")
    _plan(pro, "pro")
    _plan(free, "free")
    with CaptureQueriesContext(connection) as queries:
        for_pro = automation_simulate(automation=branching, contact=pro, now=NOW)
        for_free = automation_simulate(automation=branching, contact=free, now=NOW)
    assert not [q for q in queries if q["sql"].lstrip().upper().startswith(("INSERT", "UPDATE", "DELETE"))]
    assert not AutomationRun.objects.exists() and not AutomationStepRun.objects.exists()
    assert not TransactionalSend.objects.exists()

    assert [(s.index, s.outcome) for s in for_pro.steps] == [
        (0, "waits"),
        (1, "yes"),
        (2, "would_send"),
        (3, "ends"),
    ]
    assert for_pro.end == "ended" and for_pro.warning == ""
    wait, test, mail, _end = for_pro.steps
    assert wait.at == NOW + dt.timedelta(days=2) and wait.summary.startswith("Waits 2 days")
    assert test.detail["actual"] == "the contact's plan is 'pro'" and test.detail["result"] is True
    assert mail.detail["subject"] == "Hi Pia" and mail.at == NOW + dt.timedelta(days=2)

    assert [(s.index, s.outcome) for s in for_free.steps] == [(0, "waits"), (1, "no"), (4, "would_send")]
    assert for_free.end == "completed"
    assert for_free.steps[1].next_index == 4
    assert for_free.steps[2].detail["subject"] == "Try pro, Fred"


def test_a_suppressed_contact_is_shown_skipped_with_the_reason(branching, make_contact):
    blocked = make_contact("blocked@example.com")
    _plan(blocked, "pro")
    BlockedEmail.objects.create(
        organization=blocked.organization, email="blocked@example.com", reason="bounce"
    )
    simulation = automation_simulate(automation=branching, contact=blocked, now=NOW)
    assert simulation.steps[2].outcome == "skipped"
    assert simulation.steps[2].summary == "Skipped: Recipient suppressed"


def test_a_draft_automation_and_a_broken_step_are_said(make_automation, make_contact):
    automation = make_automation([("email", {})])
    simulation = automation_simulate(automation=automation, contact=make_contact(), now=NOW)
    assert "draft" in simulation.warning
    assert [(s.outcome, s.summary) for s in simulation.steps] == [
        ("fails", "Would fail: No email template configured")
    ]
    assert simulation.end == "failed"


def test_a_loop_stops_at_the_walkers_cap(make_automation, make_contact):
    always = {"kind": "contact_property", "field": "email", "operator": "not_empty"}
    automation = make_automation(
        [("condition", {"condition": always, "yesBranchStepIndex": 0, "noBranchStepIndex": 0})],
        status="active",
    )
    simulation = automation_simulate(automation=automation, contact=make_contact(), now=NOW)
    assert simulation.end == "loop_cap" and len(simulation.steps) == 100


def test_another_organizations_contact_is_refused(branching, make_contact):
    from owlat.organizations import organization_create

    stranger = make_contact("x@example.com", organization=organization_create(name="Beta"))
    with pytest.raises(ValueError):
        automation_simulate(automation=branching, contact=stranger, now=NOW)


def test_the_api_and_the_command_answer_the_same_walk(branching, make_contact, org):
    from django.core.management import CommandError, call_command

    from testsupport.api import ApiClient, make_key

    pro = make_contact("pro@example.com", first_name="Pia")
    _plan(pro, "pro")
    api = ApiClient(make_key(org, scopes=["automations:read"])[1])
    response = api.get(f"/automations/{branching.pk}/simulate?contactId={pro.pk}")
    assert response.status_code == 200, response.content
    data = response.json()["data"]
    assert [(s["index"], s["outcome"]) for s in data["steps"]] == [
        (0, "waits"),
        (1, "yes"),
        (2, "would_send"),
        (3, "ends"),
    ]
    assert data["steps"][2]["detail"]["subject"] == "Hi Pia" and data["end"] == "ended"
    missing = api.get(f"/automations/{branching.pk}/simulate?contactId=11111111-1111-4111-8111-111111111111")
    assert missing.status_code == 400 and missing.json()["error"]["data"]["field"] == "contactId"

    from io import StringIO

    out = StringIO()
    call_command("automation_simulate", str(branching.pk), "PRO@example.com", stdout=out)
    assert "Would send “Hi Pia” to pro@example.com" in out.getvalue() and "End: ended" in out.getvalue()
    with pytest.raises(CommandError, match="No live contact"):
        call_command("automation_simulate", str(branching.pk), "nobody@example.com")
    assert not AutomationRun.objects.exists() and not TransactionalSend.objects.exists()
