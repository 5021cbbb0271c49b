"""The end step, the editor's flow picture and its fall-through warning."""

from __future__ import annotations

import pytest
from django.urls import reverse

from automations.flow import FlowStep, fall_throughs
from automations.flow_svg import flow_svg
from automations.models import AutomationRun, AutomationStep, AutomationStepRun
from automations.tests.test_admin import inline_data, login, row
from automations.tests.test_walker_email import automation_sends, email_step, enter
from testsupport import drain_queue

IS_PRO = {"kind": "contact_property", "field": "plan", "operator": "equals", "value": "pro"}


def condition(yes, no):
    return ("condition", {"condition": IS_PRO, "yesBranchStepIndex": yes, "noBranchStepIndex": no})


def flow(*steps):
    return [FlowStep(i, t, c) for i, (t, c) in enumerate(steps)]


def test_yes_branch_running_into_the_no_branch_mail_is_a_warning():
    # 0: if pro → 1 else → 2; 1: mail A; 2: mail B — the yes branch also gets mail B
    steps = flow(condition(1, 2), ("email", {}), ("email", {}))
    [warning] = fall_throughs(steps)
    assert (warning.condition_index, warning.branch, warning.into, warning.into_branch) == (0, "yes", 2, "no")
    assert "Add an End step before step 2" in warning.message


def test_an_end_step_closing_the_branch_removes_the_warning():
    steps = flow(condition(1, 3), ("email", {}), ("end", {}), ("email", {}))
    assert fall_throughs(steps) == []


def test_branches_joining_on_a_delay_only_are_not_a_warning():
    assert (
        fall_throughs(flow(condition(1, 2), ("email", {}), ("delay", {"duration": 1, "unit": "days"}))) == []
    )


@pytest.mark.usefixtures("local_email")
def test_end_step_completes_the_run_and_the_later_mail_is_not_sent(make_automation, make_contact, template):
    automation = make_automation(
        [condition(1, 3), email_step(template), ("end", {}), email_step(template)], status="active"
    )
    pro = make_contact("pro@example.com")
    from owlat.models import ContactProperty, ContactPropertyValue

    prop = ContactProperty.objects.create(organization=pro.organization, key="plan", type="string")
    ContactPropertyValue.objects.create(
        organization=pro.organization, contact=pro, property=prop, value="pro"
    )
    run = enter(automation, pro)
    drain_queue()
    run = AutomationRun.objects.get(pk=run.pk)
    assert run.status == "completed"
    ran = dict(AutomationStepRun.objects.filter(run=run).values_list("step_index", "status"))
    assert ran == {0: "completed", 1: "completed", 2: "completed"}
    assert automation_sends(automation).count() == 1


def test_flow_svg_draws_each_step_and_escapes_labels():
    svg = flow_svg(flow(condition(1, 2), ("email", {}), ("end", {})), {1: "Send “<b>Hi</b>”"})
    assert svg.startswith("<svg") and svg.count('class="flow-step"') == 3
    assert "&lt;b&gt;" in svg and "<b>" not in svg
    assert ">yes<" in svg and ">no<" in svg and "run completes" in svg


def test_editor_shows_the_flow_and_the_warning_until_an_end_step_is_added(
    client, django_user_model, org, template, make_automation
):
    login(client, django_user_model, org)
    automation = make_automation([condition(1, 2), email_step(template), email_step(template)])
    change = reverse("admin:automations_automation_change", args=[automation.pk])
    html = client.get(change).content.decode()
    assert 'id="automation-flow"' in html and 'id="flow-warnings"' in html
    steps = list(automation.steps.order_by("step_index"))
    end = {"step_type": "end"}
    r = client.post(change, inline_data(automation, [row(s) for s in steps], extra=[end]))
    assert r.status_code == 302, r.content.decode()[:2000]
    # move the end step (now step 3) between the two mails
    steps = list(automation.steps.order_by("step_index"))
    assert [s.step_type for s in steps] == ["condition", "email", "email", "end"]
    rows = [
        row(steps[0], **{"condition-no_branch": "3"}),
        row(steps[1]),
        row(steps[2]),
        row(steps[3], position="2"),
    ]
    r = client.post(change, inline_data(automation, rows))
    assert r.status_code == 302, r.content.decode()[:2000]
    assert list(automation.steps.order_by("step_index").values_list("step_type", flat=True)) == [
        "condition",
        "email",
        "end",
        "email",
    ]
    html = client.get(change).content.decode()
    assert 'id="flow-warnings"' not in html and "Add an End step" not in html


def test_branch_targets_can_point_at_steps_added_in_the_same_save(
    client, django_user_model, org, template, make_automation
):
    login(client, django_user_model, org)
    automation = make_automation([])
    change = reverse("admin:automations_automation_change", args=[automation.pk])
    assert "step 2 (added below)" in client.get(change).content.decode()
    new = [
        {
            "step_type": "condition",
            "condition-kind": "contact_property",
            "condition-field": "email",
            "condition-operator": "not_empty",
            "condition-yes_branch": "1",
            "condition-no_branch": "2",
        },
        {"step_type": "end"},
        {"step_type": "email", "email-template": str(template.pk), "email-subject_override": ""},
    ]
    r = client.post(change, inline_data(automation, [], extra=new))
    assert r.status_code == 302, r.content.decode()[:2000]
    cond = AutomationStep.objects.get(automation=automation, step_index=0)
    assert (cond.config["yesBranchStepIndex"], cond.config["noBranchStepIndex"]) == (1, 2)
