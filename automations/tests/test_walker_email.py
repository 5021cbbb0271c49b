"""The email step inside the walker (AUT-21, AUT-25, AUT-31, D-11): send rows are counted, not faked."""

from __future__ import annotations

import datetime as dt

import pytest
from django.utils import timezone

from automations.models import AutomationRun, AutomationStepRun
from automations.triggers import automation_fanout
from automations.walker import LOOP_CAP_MESSAGE, pending_delays_process, run_start, step_execute
from delivery.models import TransactionalSend
from owlat.models import Contact, DueTask
from owlat.registry import TriggerEvent
from templates.models import EmailTemplate
from testsupport import drain_queue

ALWAYS = {"kind": "contact_property", "field": "email", "operator": "not_empty"}


pytestmark = pytest.mark.usefixtures("local_email")  # `template` and `local_email`: conftest.py


def email_step(template, **extra):
    return ("email", {"emailTemplateId": str(template.pk), **extra})


def enter(automation, contact):
    [run_id] = automation_fanout(
        TriggerEvent("contact_created", str(automation.organization_id), str(contact.pk))
    )
    return AutomationRun.objects.get(pk=run_id)


def step_runs(run):
    return list(AutomationStepRun.objects.filter(run=run).order_by("scheduled_at", "step_index"))


def automation_sends(automation):
    return TransactionalSend.objects.filter(automation_id=automation.pk)


def test_email_step_queues_one_send_row_and_records_its_id(make_automation, contact, template):
    automation = make_automation(
        [email_step(template, subjectOverride="Welcome {{firstName}}")], status="active"
    )
    run = enter(automation, contact)
    drain_queue(queue="default")
    [send] = automation_sends(automation)
    assert (send.kind, send.contact_id, send.email, send.subject) == (
        "automation",
        contact.pk,
        "jane@example.com",
        "Welcome Jane",
    )
    [sr] = step_runs(run)
    assert (sr.status, sr.email_send_id, sr.error_message) == ("completed", str(send.pk), None)
    run.refresh_from_db()
    assert run.status == "completed"


def test_two_dispatches_of_the_same_pending_step_send_one_email(make_automation, contact, template):
    # Given a delay followed by an email, whose pending delay step is dispatched both by its original
    # delayed task and by the recovery cron
    automation = make_automation(
        [("delay", {"duration": 1, "unit": "minutes"}), email_step(template)], status="active"
    )
    run = enter(automation, contact)
    drain_queue(queue="default")
    assert pending_delays_process(now=timezone.now() + dt.timedelta(minutes=2)) == 1  # the cron's dispatch
    DueTask.objects.update(due_at=timezone.now() - dt.timedelta(seconds=1))  # the original comes due too
    drain_queue(queue="default")
    # then the step executed once and exactly one email send row exists
    assert automation_sends(automation).count() == 1
    run.refresh_from_db()
    assert (run.status, run.steps_executed) == ("completed", 2)
    assert [s.status for s in step_runs(run)] == ["completed", "completed"]


def test_direct_double_dispatch_executes_once(make_automation, contact, template):
    automation = make_automation([email_step(template)], status="active")
    run = enter(automation, contact)
    run_start(run.pk)
    [sr] = step_runs(run)
    results = [step_execute(run.pk, sr.pk), step_execute(run.pk, sr.pk)]
    assert results[0] == "run completed"
    assert results[1] in ("not claimed", "step run already finished")
    assert automation_sends(automation).count() == 1


def test_backward_loop_stops_at_100_with_exactly_50_emails(make_automation, contact, template):
    # Given steps [0: email, 1: condition with both branches → 0]
    automation = make_automation(
        [
            email_step(template),
            ("condition", {"condition": ALWAYS, "yesBranchStepIndex": 0, "noBranchStepIndex": 0}),
        ],
        status="active",
    )
    run = enter(automation, contact)
    drain_queue(queue="default", max_tasks=500)
    # then exactly 50 emails are queued, the 101st claim fails with the message and the run is cancelled
    assert automation_sends(automation).count() == 50
    run.refresh_from_db()
    assert (run.status, run.steps_executed) == ("cancelled", 101)
    last = step_runs(run)[-1]
    assert (last.step_index, last.status, last.error_message) == (0, "failed", LOOP_CAP_MESSAGE)
    assert last.error_message == "Automation exceeded 100 step executions — cancelled to prevent a loop"


def test_unsubscribed_contact_gets_no_mail_and_the_step_completes(make_automation, contact, template):
    Contact.objects.filter(pk=contact.pk).update(unsubscribed_at=timezone.now())
    automation = make_automation([email_step(template)], status="active")
    run = enter(automation, contact)
    drain_queue(queue="default")
    assert automation_sends(automation).count() == 0
    [sr] = step_runs(run)
    assert (sr.status, sr.email_send_id, sr.error_message, sr.retry_count) == ("completed", None, None, 0)
    assert sr.note == "Contact unsubscribed"
    run.refresh_from_db()
    assert run.status == "completed"


def test_suppressed_recipient_completes_without_a_send(make_automation, contact, template):
    from owlat.suppression import suppress

    suppress(organization_id=contact.organization_id, email=contact.email, reason="manual")
    automation = make_automation([email_step(template)], status="active")
    run = enter(automation, contact)
    drain_queue(queue="default")
    assert automation_sends(automation).count() == 0
    [sr] = step_runs(run)
    assert (sr.status, sr.email_send_id, sr.retry_count) == ("completed", None, 0)
    assert sr.note


@pytest.mark.parametrize(
    ("setup", "message"),
    [
        ("no_email", "Contact has no email address"),
        ("no_template", "Email template not found"),
        ("no_html", "Email template has no HTML content"),
        (
            "no_sender",
            "Email sender not configured. Please set a default sender email in organization settings.",
        ),
        ("no_provider", "No delivery provider configured"),
    ],
)
def test_email_failures_go_through_retries_then_cancel(
    make_automation, make_contact, contact, template, settings, setup, message
):
    from owlat.models import OrganizationSettings

    target = contact
    step = email_step(template)
    if setup == "no_email":
        target = Contact.objects.create(organization=contact.organization, email=None, source="api")
    elif setup == "no_template":
        step = ("email", {"emailTemplateId": "00000000-0000-0000-0000-000000000000"})
    elif setup == "no_html":
        EmailTemplate.objects.filter(pk=template.pk).update(html_content="  ")
    elif setup == "no_sender":
        OrganizationSettings.objects.filter(organization=contact.organization).update(default_from_email="")
    elif setup == "no_provider":
        settings.EMAIL_PROVIDER = ""
    automation = make_automation([step], status="active")
    run = enter(automation, target)
    run_start(run.pk)
    [sr] = step_runs(run)
    for attempt in range(4):
        step_execute(run.pk, sr.pk, attempt)
    sr.refresh_from_db()
    run.refresh_from_db()
    assert (sr.status, sr.error_message, sr.retry_count) == ("failed", message, 3)
    assert run.status == "cancelled"
    assert automation_sends(automation).count() == 0
