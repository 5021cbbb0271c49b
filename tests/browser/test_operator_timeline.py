"""Operator screens in a real browser: the automation editor's fall-through warning going away once the branch
ends at an End step; the contact page's one timeline after an import, an automation run and a campaign send;
a failed background task as a read-only, readable record. Tasks run in the test process (`drain_queue`, the
`local` provider); screenshots under var/screenshots/."""

from __future__ import annotations

import pytest

from tests.browser.conftest import PASSWORD, login, screenshot

pytestmark = pytest.mark.django_db(transaction=True)


def _template(org, name: str, subject: str, **fields):
    from templates.models import EmailTemplate

    return EmailTemplate.objects.create(
        organization=org,
        name=name,
        subject=subject,
        html_content=f"<p>{name}</p>",
        status="published",
        **fields,
    )


def _automation(org, name: str, trigger: str, steps: list[tuple[str, dict]], *, active: bool = False):
    from automations.lifecycle import automation_transition
    from automations.models import Automation, AutomationStep

    automation = Automation.objects.create(organization=org, name=name, trigger_type=trigger)
    for i, (kind, config) in enumerate(steps):
        AutomationStep.objects.create(
            organization=org, automation=automation, step_index=i, step_type=kind, config=config
        )
    if active:
        assert automation_transition(automation_id=automation.pk, to="active", actor="test").ok
    return automation


def test_the_fall_through_warning_goes_once_the_branch_ends(page, live_server, operator):
    org = operator["org"]
    pro = _template(org, "Pro tips", "Pro tips", type="automation")
    upgrade = _template(org, "Upgrade", "Upgrade?", type="automation")
    is_pro = {"kind": "contact_property", "field": "plan", "operator": "equals", "value": "pro"}
    automation = _automation(
        org,
        "Onboarding",
        "contact_created",
        [
            ("condition", {"condition": is_pro, "yesBranchStepIndex": None, "noBranchStepIndex": 3}),
            ("email", {"emailTemplateId": str(pro.pk)}),
            ("delay", {"duration": 1, "unit": "days"}),
            ("email", {"emailTemplateId": str(upgrade.pk)}),
        ],
    )
    login(page, live_server)
    url = f"{live_server.url}/admin/automations/automation/{automation.pk}/change/"
    page.goto(url)
    warnings = page.locator("#flow-warnings")
    assert warnings.is_visible()
    assert (
        "continues into the no branch" in warnings.inner_text() and "Add an End step" in warnings.inner_text()
    )
    screenshot(page, "29-automation-fall-through-warning")
    # the yes branch stops where the operator says: the delay becomes an End step
    page.locator("select[name='steps-2-step_type']").select_option("end")
    page.click("[name=_continue]")
    page.wait_for_load_state()
    assert [s.step_type for s in automation.steps.order_by("step_index")] == [
        "condition",
        "email",
        "end",
        "email",
    ]
    assert page.locator("#flow-warnings").count() == 0
    screenshot(page, "29-automation-end-step-no-warning")


def test_the_contact_timeline_after_an_import_an_automation_and_a_campaign(
    page, live_server, operator, tmp_path, settings
):
    from campaigns.services import campaign_create, campaign_send_now
    from owlat.models import Contact, ContactTopic, Topic
    from owlat.permissions import Authority
    from testsupport.queue import drain_queue

    settings.SITE_URL = "http://127.0.0.1:8000"
    org = operator["org"]
    welcome = _template(org, "Welcome", "Welcome aboard", type="automation")
    _automation(
        org, "Welcome flow", "contact_created", [("email", {"emailTemplateId": str(welcome.pk)})], active=True
    )
    login(page, live_server)
    # a contact created in the admin enters the automation; its email step runs
    page.goto(f"{live_server.url}/admin/owlat/contact/add/")
    page.fill("#id_email", "ada@example.com")
    page.fill("#id_first_name", "Ada")
    page.click("[name=_continue]")
    page.wait_for_load_state()
    drain_queue(max_tasks=100)
    # an import updates her
    csv_file = tmp_path / "spring.csv"
    csv_file.write_text("email,first_name,last_name\nada@example.com,Ada,Lovelace\n")
    page.goto(f"{live_server.url}/admin/owlat/contact/")
    page.click("text=Import CSV")
    page.set_input_files("#id_file", str(csv_file))
    page.click(".owlat-submit")
    page.wait_for_load_state()
    page.click(".owlat-submit")
    page.wait_for_load_state()
    assert "Import finished" in page.inner_text(".owlat-import-summary")
    # a campaign to her topic
    contact = Contact.objects.get(organization=org, email="ada@example.com")
    topic = Topic.objects.create(organization=org, name="Newsletter", require_double_opt_in=False)
    ContactTopic.objects.create(organization=org, contact=contact, topic=topic, consent_source="admin")
    system = Authority.system("test")
    campaign = campaign_create(
        organization_id=org.pk,
        actor="test",
        authority=system,
        fields={
            "name": "April newsletter",
            "email_template_id": _template(org, "April", "April news").pk,
            "from_email": "hello@acme.test",
            "audience": {"kind": "topic", "topicId": str(topic.pk)},
        },
    )
    assert campaign_send_now(authority=system, campaign_id=campaign.pk, organization_id=org.pk, actor="t").ok
    drain_queue(max_tasks=1000)

    page.goto(f"{live_server.url}/admin/owlat/contact/{contact.pk}/change/")
    timeline = page.locator("#contact-timeline")
    text = timeline.inner_text()
    for expected in (
        "Campaign mail “April news”",
        "Subscribed to “Newsletter”",
        "Imported from a file",
        "file spring.csv",
        "Entered automation “Welcome flow”",
        "Step 1 (email) of “Welcome flow”",
        "Automation mail “Welcome aboard”",
        "Contact created",
    ):
        assert expected in text, (expected, text)
    kinds = timeline.locator("tbody tr").evaluate_all("rows => rows.map(r => r.dataset.kind)")
    assert kinds[0] == "send" and kinds[-1] == "activity"  # newest first: the campaign, ..., her creation
    # the timeline is above the contact's form
    assert timeline.bounding_box()["y"] < page.locator("#contact_form fieldset").first.bounding_box()["y"]
    screenshot(page, "29-contact-timeline")


def test_a_failed_task_is_shown_read_only_and_readable(page, live_server, operator, django_user_model):
    from django.utils import timezone
    from django_q.models import Failure

    django_user_model.objects.create_superuser(username="root", password=PASSWORD)
    now = timezone.now()
    task = Failure.objects.create(
        id="t-failed-1",
        name="eleven-twelve",
        func="owlat.audit.audit_purge_task",
        args=(),
        kwargs={},
        started=now,
        stopped=now,
        success=False,
        result='database is locked : Traceback (most recent call last):\n  File "owlat/audit.py", line 9, in '
        "audit_purge_task\n    purge()\nOperationalError: database is locked",
    )
    login(page, live_server, username="root")
    page.goto(f"{live_server.url}/admin/django_q/failure/{task.pk}/change/")
    body = page.locator("#content-main, main").first
    assert "database is locked" in body.inner_text()
    trace = page.locator("pre", has_text="Traceback (most recent call last):")
    assert trace.is_visible() and "OperationalError: database is locked" in trace.inner_text()
    # nothing to edit or save
    form = page.locator("#failure_form")
    assert form.count() == 1 and form.locator("input[type=text], textarea, select").count() == 0
    assert page.locator("[name=_save], [name=_continue]").count() == 0
    screenshot(page, "29-failed-task-read-only")
