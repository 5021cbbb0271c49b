"""Duplicate-safe tasks (issue 12 item 4): with the test switch `OWLAT_TEST_DELIVER_TWICE` the enqueue helper
hands every task to django-q2 twice — immediate tasks, due tasks handed over by `run_due_tasks`, the walker's
hops and retries and the delivery pool's jobs — as a Redis redelivery or a crashed worker would. Real worker
processes and the loopback SMTP sink then prove that the walker and the delivery worker send each mail exactly
once and that no run forks."""

from __future__ import annotations

import time

import pytest

from automations.counters import counters_rollup
from automations.lifecycle import automation_activate
from automations.models import AutomationRun, AutomationStepRun
from automations.services import automation_create
from delivery.models import TransactionalSend
from owlat.jobs import enqueue
from owlat.models import Domain, DomainStatus
from owlat.organizations import organization_create
from owlat.permissions import Authority
from templates.models import EmailTemplate
from testsupport import queued_tasks
from testsupport.api import ApiClient, make_key

DELAY = {"duration": 0.05, "unit": "minutes"}  # 3 seconds, through a due-task row


@pytest.mark.django_db
def test_the_switch_hands_every_task_over_twice(settings):
    settings.OWLAT_TEST_DELIVER_TWICE = True
    enqueue("owlat.jobs.heartbeat_task", "x")
    assert [t.args for t in queued_tasks() if t.func == "owlat.jobs.heartbeat_task"] == [("x",), ("x",)]
    settings.OWLAT_TEST_DELIVER_TWICE = False
    enqueue("owlat.jobs.heartbeat_task", "y")
    assert [t.args for t in queued_tasks() if t.args == ("y",)] == [("y",)]


def _automation(org, name, steps):
    automation = automation_create(
        organization_id=org.pk, actor="test", name=name, trigger_type="contact_created", steps=steps
    )
    assert automation_activate(
        automation_id=automation.pk, organization_id=org.pk, actor="test", authority=Authority.system("test")
    ).ok
    return automation


@pytest.fixture
def world(settings):
    settings.API_RATE_LIMIT_PER_SECOND = 1000
    settings.API_RATE_LIMIT_BURST = 1000
    settings.OWLAT_TEST_DELIVER_TWICE = True  # the API requests run in this process
    org = organization_create(name="Acme", default_from_email="hello@acme.test", default_from_name="Acme")
    Domain.objects.create(organization=org, domain="acme.test", status=DomainStatus.VERIFIED)
    welcome = EmailTemplate.objects.create(
        organization=org, name="Welcome", subject="Welcome, {{firstName}}!", html_content="<p>Hi</p>"
    )
    pro = EmailTemplate.objects.create(
        organization=org, name="Pro", subject="Pro tips", html_content="<p>Tips</p>"
    )
    # no HTML yet: the first attempt fails and goes through the walker's retries (1 s, 5 s, 30 s)
    flaky = EmailTemplate.objects.create(
        organization=org, name="Flaky", subject="Second try", html_content=""
    )
    plan_is_pro = {"kind": "contact_property", "field": "plan", "operator": "equals", "value": "pro"}
    series = _automation(
        org,
        "Welcome series",
        [
            {"stepType": "email", "config": {"emailTemplateId": str(welcome.pk)}},
            {"stepType": "delay", "config": DELAY},
            {
                "stepType": "condition",
                "config": {"condition": plan_is_pro, "yesBranchStepIndex": 3, "noBranchStepIndex": 4},
            },
            {"stepType": "email", "config": {"emailTemplateId": str(pro.pk)}},
        ],
    )
    retrying = _automation(
        org, "Retrying", [{"stepType": "email", "config": {"emailTemplateId": str(flaky.pk)}}]
    )
    _, raw = make_key(org, ["contacts:write"])
    return {"api": ApiClient(raw), "series": series, "retrying": retrying, "flaky": flaky}


@pytest.mark.e2e
@pytest.mark.django_db(transaction=True)
@pytest.mark.worker_env(OWLAT_TEST_DELIVER_TWICE=1)
def test_every_task_delivered_twice_still_sends_each_mail_once(world, smtp_sink, workers):
    api = world["api"]
    r = api.post("/contacts", {"email": "pro@example.com", "firstName": "Pia", "properties": {"plan": "Pro"}})
    assert r.status_code == 201, r.content
    r = api.post("/contacts", {"email": "basic@example.com", "firstName": "Ben"})
    assert r.status_code == 201, r.content

    # The flaky step fails on its first attempt for both runs; then its template gets its HTML.
    retrying = world["retrying"]
    workers.wait_until(
        lambda: AutomationStepRun.objects.filter(run__automation=retrying, retry_count__gte=1).count() == 2,
        timeout=60,
    )
    EmailTemplate.objects.filter(pk=world["flaky"].pk).update(html_content="<p>Now with content</p>")

    # Every run ends completed: 2 + 1 mails of the series, 2 of the retrying automation.
    workers.wait_until(lambda: smtp_sink.count_for("pro@example.com") >= 3, timeout=90)
    workers.wait_until(
        lambda: (
            AutomationRun.objects.filter(status="completed").count() == 4
            and not TransactionalSend.objects.filter(status="queued").exists()
        ),
        timeout=90,
    )
    time.sleep(2.0)  # let every duplicate task run out

    subjects = sorted((m.rcpt_tos[0], m["Subject"]) for m in smtp_sink.messages)
    assert subjects == [
        ("basic@example.com", "Second try"),
        ("basic@example.com", "Welcome, Ben!"),
        ("pro@example.com", "Pro tips"),
        ("pro@example.com", "Second try"),
        ("pro@example.com", "Welcome, Pia!"),
    ]
    # one send row per mail, each claimed once by the delivery worker
    sends = list(TransactionalSend.objects.values_list("status", "dispatch_attempts"))
    assert sorted(sends) == [("sent", 1)] * 5
    # no run forked: one run per (automation, contact), one step run per step visited
    assert AutomationRun.objects.count() == 4
    series = world["series"]
    for email, visited in (("pro@example.com", [0, 1, 2, 3]), ("basic@example.com", [0, 1, 2, 3])):
        run = AutomationRun.objects.get(automation=series, contact__email=email)
        assert (
            sorted(AutomationStepRun.objects.filter(run=run).values_list("step_index", flat=True)) == visited
        )
        assert run.steps_executed == (4 if email.startswith("pro") else 3)
    for sr in AutomationStepRun.objects.filter(run__automation=retrying):
        assert (sr.status, sr.attempt) == ("completed", sr.retry_count) and sr.retry_count >= 1
    counters_rollup()  # counters move as deltas (issue 12 item 2)
    retrying.refresh_from_db()
    series.refresh_from_db()
    assert (retrying.stats_entered, retrying.stats_completed, retrying.consecutive_run_failures) == (2, 2, 0)
    assert (series.stats_entered, series.stats_completed) == (2, 2)
