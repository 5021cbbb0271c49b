"""The admin editor, lifecycle buttons, run browser and funnel (D-12)."""

from __future__ import annotations

from django.urls import reverse

from automations.models import Automation, AutomationStep
from automations.tests.conftest import DELAY_1H
from owlat.models import Membership

COND = {"kind": "contact_property", "field": "plan", "operator": "equals", "value": "pro"}


def login(client, django_user_model, org, role="owner", username="ann"):
    user = django_user_model.objects.create_user(username=username, password="pw", is_staff=True)
    Membership.objects.create(user=user, organization=org, role=role)
    client.force_login(user)
    return user


def inline_data(automation, rows, extra=()):
    """POST data of the change form: the automation fields plus the step inline."""
    prefix = "steps"
    data = {
        "name": automation.name,
        "description": automation.description or "",
        "trigger_type": automation.trigger_type,
        f"{prefix}-TOTAL_FORMS": str(len(rows) + len(extra)),
        f"{prefix}-INITIAL_FORMS": str(len(rows)),
        f"{prefix}-MIN_NUM_FORMS": "0",
        f"{prefix}-MAX_NUM_FORMS": "1000",
    }
    for i, row in enumerate([*rows, *extra]):
        for key, value in row.items():
            data[f"{prefix}-{i}-{key}"] = value
    return data


def settings_data(step_type, config):
    """The settings sub-form's POST fields (`<type>-<field>`) that show a stored config."""
    from automations.admin_forms.steps import STEP_FORMS

    initial = STEP_FORMS[step_type].initial_from_config(config)
    return {f"{step_type}-{k}": "" if v is None else str(v) for k, v in initial.items()}


def row(step, **overrides):
    base = {
        "id": str(step.pk),
        "automation": str(step.automation_id),
        "step_type": step.step_type,
        "position": str(step.step_index),
        **settings_data(step.step_type, step.config),
    }
    base.update(overrides)
    return base


def test_changelist_shows_counts_per_status(client, django_user_model, org, make_automation):
    login(client, django_user_model, org)
    make_automation([DELAY_1H], status="active")
    make_automation([DELAY_1H])
    make_automation([DELAY_1H])
    r = client.get(reverse("admin:automations_automation_changelist"))
    assert r.status_code == 200
    html = r.content.decode()
    assert "Draft (2)" in html and "Active (1)" in html and "Paused (0)" in html


def test_member_of_another_organization_sees_nothing(client, django_user_model, org, make_automation):
    from owlat.organizations import organization_create

    other = organization_create(name="Zeta")
    automation = make_automation([DELAY_1H], organization=other)
    login(client, django_user_model, org)
    r = client.get(reverse("admin:automations_automation_change", args=[automation.pk]))
    assert r.status_code in (302, 404)


def test_lifecycle_buttons_call_the_lifecycle_and_show_its_message(
    client, django_user_model, org, make_automation
):
    login(client, django_user_model, org)
    automation = make_automation([])
    change = reverse("admin:automations_automation_change", args=[automation.pk])
    html = client.get(change).content.decode()
    activate = reverse("admin:automations_automation_transition", args=[automation.pk, "activate"])
    assert f'href="{activate}"' in html  # a link to the confirmation page, not a form that acts
    page = client.get(activate).content.decode()
    assert "Activate this automation?" in page and "each time a contact is created" in page
    automation.refresh_from_db()
    assert automation.status == "draft"  # GET never acts
    assert "Activate this automation?" in client.post(activate).content.decode()  # nor a bare POST
    r = client.post(activate, {"post": "yes"}, follow=True)
    assert "Automation must have at least one step to be activated" in r.content.decode()
    AutomationStep.objects.create(
        organization=org, automation=automation, step_index=0, step_type="delay", config=DELAY_1H[1]
    )
    r = client.post(activate, {"post": "yes"}, follow=True)
    assert "Automation is now active." in r.content.decode()
    automation.refresh_from_db()
    assert automation.status == "active"
    pause = client.get(reverse("admin:automations_automation_transition", args=[automation.pk, "pause"]))
    assert (
        "Pause this automation?" in pause.content.decode()
        and "runs in progress end" in pause.content.decode()
    )
    revert = reverse("admin:automations_automation_transition", args=[automation.pk, "revert-to-draft"])
    assert client.get(revert).status_code == 405


def test_editors_get_the_permission_message(client, django_user_model, org, make_automation):
    login(client, django_user_model, org, role="editor")
    automation = make_automation([DELAY_1H])
    r = client.post(
        reverse("admin:automations_automation_transition", args=[automation.pk, "activate"]),
        {"post": "yes"},
        follow=True,
    )
    assert "Only owners and admins can activate automations" in r.content.decode()
    automation.refresh_from_db()
    assert automation.status == "draft"


def test_create_automation_with_steps_through_the_editor(client, django_user_model, org):
    login(client, django_user_model, org)
    data = {
        "name": "Welcome",
        "description": "",
        "trigger_type": "event_received",
        "trigger-event_name": "signup",
        "steps-TOTAL_FORMS": "2",
        "steps-INITIAL_FORMS": "0",
        "steps-MIN_NUM_FORMS": "0",
        "steps-MAX_NUM_FORMS": "1000",
        "steps-0-step_type": "delay",
        "steps-0-delay-duration": "1",
        "steps-0-delay-unit": "days",
        "steps-1-step_type": "condition",
        "steps-1-condition-kind": "email_activity",
        "steps-1-condition-activity": "opened",
        "steps-1-condition-activity_operator": "is_true",
        "steps-1-condition-yes_branch": "",
        "steps-1-condition-no_branch": "",
    }
    r = client.post(reverse("admin:automations_automation_add"), data)
    assert r.status_code == 302, r.content.decode()[:3000]
    automation = Automation.objects.get(name="Welcome")
    assert automation.status == "draft" and automation.trigger_config == {"eventName": "signup"}
    assert [(s.step_index, s.step_type) for s in automation.steps.order_by("step_index")] == [
        (0, "delay"),
        (1, "condition"),
    ]
    from owlat.models import AuditLog

    assert AuditLog.objects.filter(action="automation.created", resource_id=str(automation.pk)).exists()


def test_invalid_step_config_is_a_form_error(client, django_user_model, org, make_automation):
    login(client, django_user_model, org)
    automation = make_automation([DELAY_1H])
    [step] = automation.steps.all()
    data = inline_data(automation, [row(step, **{"delay-duration": "-3"})])
    r = client.post(reverse("admin:automations_automation_change", args=[automation.pk]), data)
    assert r.status_code == 200
    assert "Wait: Enter a number greater than 0." in r.content.decode()


def test_branch_targets_are_chosen_from_the_step_list_and_follow_reorders(
    client, django_user_model, org, make_automation
):
    login(client, django_user_model, org)
    automation = make_automation(
        [
            DELAY_1H,
            ("condition", {"condition": COND, "yesBranchStepIndex": None, "noBranchStepIndex": None}),
            ("delay", {"duration": 2, "unit": "days"}),
        ]
    )
    steps = list(automation.steps.order_by("step_index"))
    change = reverse("admin:automations_automation_change", args=[automation.pk])
    html = client.get(change).content.decode()
    assert "step 2 (delay)" in html and "the next step" in html
    # pick yes → step 2, no → step 0
    data = inline_data(
        automation,
        [
            row(steps[0]),
            row(steps[1], **{"condition-yes_branch": "2", "condition-no_branch": "0"}),
            row(steps[2]),
        ],
    )
    r = client.post(change, data)
    assert r.status_code == 302, r.content.decode()[:3000]
    cond = AutomationStep.objects.get(pk=steps[1].pk)
    assert (cond.config["yesBranchStepIndex"], cond.config["noBranchStepIndex"]) == (2, 0)
    # move the last delay to the front: branch targets follow their steps
    steps = list(automation.steps.order_by("step_index"))
    data = inline_data(automation, [row(steps[0]), row(steps[1]), row(steps[2], position="0")])
    r = client.post(change, data)
    assert r.status_code == 302, r.content.decode()[:3000]
    order = list(automation.steps.order_by("step_index").values_list("pk", flat=True))
    assert order == [steps[2].pk, steps[0].pk, steps[1].pk]
    cond = AutomationStep.objects.get(pk=steps[1].pk)
    assert (cond.config["yesBranchStepIndex"], cond.config["noBranchStepIndex"]) == (0, 1)
    # delete the first step (the yes target): the branch becomes null
    steps = list(automation.steps.order_by("step_index"))
    data = inline_data(automation, [row(steps[0], DELETE="on"), row(steps[1]), row(steps[2])])
    r = client.post(change, data)
    assert r.status_code == 302
    cond = AutomationStep.objects.get(pk=cond.pk)
    assert cond.step_index == 1
    assert (cond.config["yesBranchStepIndex"], cond.config["noBranchStepIndex"]) == (None, 0)


def test_steps_and_trigger_are_read_only_outside_draft(client, django_user_model, org, make_automation):
    login(client, django_user_model, org)
    automation = make_automation([DELAY_1H], status="active")
    html = client.get(reverse("admin:automations_automation_change", args=[automation.pk])).content.decode()
    assert 'name="steps-0-delay-duration"' not in html
    assert 'name="trigger_type"' not in html and 'name="trigger-event_name"' not in html
    assert "Pause" in html


def test_run_browser_shows_the_timeline_and_funnel(client, django_user_model, org, make_automation, contact):
    from automations.triggers import automation_fanout
    from owlat.registry import TriggerEvent
    from testsupport import drain_queue

    login(client, django_user_model, org)
    automation = make_automation(
        [
            ("condition", {"condition": COND, "yesBranchStepIndex": None, "noBranchStepIndex": 2}),
            DELAY_1H,
            DELAY_1H,
        ],
        status="active",
    )
    [run_id] = automation_fanout(TriggerEvent("contact_created", str(org.pk), str(contact.pk)))
    drain_queue()
    r = client.get(reverse("admin:automations_automationrun_change", args=[run_id]))
    assert r.status_code == 200
    html = r.content.decode()
    assert "skipped" in html and "pending" in html and "completed" in html
    r = client.get(
        reverse("admin:automations_automationrun_changelist") + f"?automation__id__exact={automation.pk}"
    )
    assert run_id in r.content.decode()
    html = client.get(reverse("admin:automations_automation_change", args=[automation.pk])).content.decode()
    assert "step funnel" in html.lower() and '<table id="step-funnel"' in html


def test_bulk_delete_refuses_active_automations(client, django_user_model, org, make_automation):
    from owlat.models import AuditLog

    login(client, django_user_model, org)
    active = make_automation([DELAY_1H], status="active", name="Live")
    draft = make_automation([DELAY_1H], name="Old")
    url = reverse("admin:automations_automation_changelist")
    r = client.post(
        url, {"action": "delete_selected", "_selected_action": [str(active.pk), str(draft.pk)], "post": "yes"}
    )
    assert r.status_code == 403
    assert Automation.objects.filter(pk__in=[active.pk, draft.pk]).count() == 2
    r = client.post(url, {"action": "delete_selected", "_selected_action": [str(draft.pk)], "post": "yes"})
    assert r.status_code == 302
    assert not Automation.objects.filter(pk=draft.pk).exists()
    assert AuditLog.objects.filter(action="automation.deleted", resource_id=str(draft.pk)).exists()
