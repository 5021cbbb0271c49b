"""End to end (issue 4): real workers (qcluster per queue + the due-task dispatcher) and the loopback SMTP sink.

A contact created through `POST /api/v1/contacts` enters a welcome automation
`0: email "Welcome" → 1: delay → 2: condition plan = "pro" (yes → 3, no → 4 = past the end) → 3: email "Pro tips"`
and receives exactly the emails its branch dictates.

The delay is `{"duration": 0.05, "unit": "minutes"}` (3 s): AUT-32 only asks for a number > 0, so this is a
config the spec allows, and the wait runs for real through the due-task row and `run_due_tasks` — nothing in the
test moves time. The test asserts the pending delay row (`delay_until` ≈ 3 s after the delay step was scheduled)
and that the second email arrives after the delay.
"""

from __future__ import annotations

import datetime as dt
import time

import pytest

from automations.counters import counters_rollup
from automations.models import AutomationRun, AutomationStepRun
from automations.services import automation_create
from owlat.models import DueTask
from templates.models import EmailTemplate
from testsupport import wait_until
from testsupport.api import ApiClient, make_key
from testsupport.world import activate, email_step, plan_is_pro_step, sending_organization

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

DELAY = {"duration": 0.05, "unit": "minutes"}  # 3 seconds


@pytest.fixture
def world(settings):
    settings.API_RATE_LIMIT_PER_SECOND = 1000
    settings.API_RATE_LIMIT_BURST = 1000
    org = sending_organization("Acme", "acme.test")
    welcome = EmailTemplate.objects.create(
        organization=org,
        name="Welcome",
        subject="Welcome, {{firstName|'friend'}}!",
        html_content="<p>Hi {{firstName}}</p>",
    )
    pro = EmailTemplate.objects.create(
        organization=org, name="Pro tips", subject="Pro tips for {{firstName}}", html_content="<p>Tips</p>"
    )
    automation = automation_create(
        organization_id=org.pk,
        actor="test",
        name="Welcome series",
        trigger_type="contact_created",
        steps=[
            email_step(welcome),
            {"stepType": "delay", "config": DELAY},
            plan_is_pro_step(yes=3, no=4),
            email_step(pro),
        ],
    )
    activate(automation, "test")
    _, raw = make_key(org, ["contacts:write"])
    return {"org": org, "automation": automation, "api": ApiClient(raw)}


def test_contact_created_through_the_api_gets_exactly_its_branch_emails(world, smtp_sink, workers):
    api = world["api"]
    started = time.monotonic()
    r = api.post("/contacts", {"email": "pro@example.com", "firstName": "Pia", "properties": {"plan": "Pro"}})
    assert r.status_code == 201, r.content
    r = api.post("/contacts", {"email": "basic@example.com", "firstName": "Ben"})
    assert r.status_code == 201, r.content

    # Both get the welcome mail right away.
    smtp_sink.wait_for(2, timeout=30)
    first_at = time.monotonic()
    subjects = {m.rcpt_tos[0]: m["Subject"] for m in smtp_sink.messages}
    assert subjects == {"pro@example.com": "Welcome, Pia!", "basic@example.com": "Welcome, Ben!"}

    # While they wait: the delay step is pending with delay_until recorded and a due-task row behind it.
    automation = world["automation"]
    pending = wait_until(
        lambda: (
            list(AutomationStepRun.objects.filter(run__automation=automation, step_index=1, status="pending"))
            or list(
                AutomationStepRun.objects.filter(run__automation=automation, step_index=1, status="completed")
            )
        ),
        timeout=30,
    )
    for sr in pending:
        assert sr.delay_until is not None
        assert dt.timedelta(seconds=2.9) <= sr.delay_until - sr.scheduled_at <= dt.timedelta(seconds=3.1)
    if pending[0].status == "pending":
        assert DueTask.objects.filter(func="automations.tasks.automation_step_execute_task").exists()

    # The pro contact gets "Pro tips" after the delay; the basic contact's run completes without it.
    [tips] = [m for m in smtp_sink.wait_for(3, timeout=30) if m["Subject"].startswith("Pro tips")]
    assert tips.rcpt_tos == ["pro@example.com"] and tips["Subject"] == "Pro tips for Pia"
    assert time.monotonic() - started >= 3.0
    runs = wait_until(
        lambda: (
            (rs := list(AutomationRun.objects.filter(automation=automation)))
            and all(r.status == "completed" for r in rs)
            and rs
        ),
        timeout=30,
    )
    assert len(runs) == 2
    by_email = {r.contact.email: r for r in runs}
    timeline = lambda run: [  # noqa: E731
        (s.step_index, s.status)
        for s in AutomationStepRun.objects.filter(run=run).order_by("scheduled_at", "step_index")
    ]
    assert timeline(by_email["pro@example.com"]) == [
        (0, "completed"),
        (1, "completed"),
        (2, "completed"),
        (3, "completed"),
    ]
    assert timeline(by_email["basic@example.com"]) == [
        (0, "completed"),
        (1, "completed"),
        (2, "completed"),
        (3, "skipped"),
    ]
    email_ids = list(
        AutomationStepRun.objects.filter(
            run__automation=automation, step_type="email", status="completed"
        ).values_list("email_send_id", flat=True)
    )
    assert len(email_ids) == 3 and all(email_ids)

    # Nothing more arrives.
    time.sleep(1.0)
    assert smtp_sink.count_for("pro@example.com") == 2
    assert smtp_sink.count_for("basic@example.com") == 1
    counters_rollup()  # counters move as deltas (issue 12 item 2)
    automation.refresh_from_db()
    assert (automation.stats_entered, automation.stats_completed, automation.stats_active) == (2, 2, 0)
    assert first_at - started < 15
