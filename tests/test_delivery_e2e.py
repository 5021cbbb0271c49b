"""End to end: real worker processes (qcluster per pool + due-task dispatcher) and a real SMTP server on loopback.

- a transactional send through the API arrives once, personalized, with Message-ID, HTML and text parts;
- automation and campaign mail (both marketing mail) carry List-Unsubscribe (one-click) and the bulk headers;
- 451 twice then success: one message after the spec's waits (1 s and 5 s, measured on the wall clock);
- pacing: with an injected clock, the pool limiter admits the configured rate across two worker processes.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
import uuid

import pytest

from delivery.models import EmailSend, TransactionalSend
from owlat.models import Contact
from templates.models import EmailTemplate, TransactionalEmail
from testsupport import BASE_DIR, worker_environment
from testsupport.api import ApiClient, make_key
from testsupport.world import sending_organization

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def world(settings):
    org = sending_organization("Acme", "acme.test", postal_address="Acme Inc., 1 Main Street")
    welcome = TransactionalEmail.objects.create(
        organization=org,
        slug="welcome",
        name="Welcome",
        subject="Welcome, {{firstName}}!",
        html_content="<html><head><style>h1{color:#111111}</style></head><body><h1>Hi {{firstName}}</h1>"
        "<p>Your code: {{code}}</p></body></html>",
    )
    TransactionalEmail.objects.filter(pk=welcome.pk).update(status="published")
    template = EmailTemplate.objects.create(
        organization=org,
        name="News",
        subject="News for {{firstName|'you'}}",
        html_content='<p>Hello {{firstName}}</p><p><a href="https://example.org/post">Read</a></p>',
    )
    _, raw = make_key(org, ["transactional:send", "transactional:read"])
    return {"org": org, "template": template, "api": ApiClient(raw)}


def test_transactional_send_arrives_once_personalized(world, smtp_sink, workers):
    r = world["api"].post(
        "/transactional",
        {
            "email": "jane@example.com",
            "slug": "welcome",
            "dataVariables": {"firstName": "Jane", "code": "<42>"},
        },
    )
    assert r.status_code == 202, r.content
    send_id = r.json()["data"]["transactionalEmailId"]
    [msg] = smtp_sink.wait_for(1, timeout=20)
    assert msg.rcpt_tos == ["jane@example.com"]
    assert msg["Subject"] == "Welcome, Jane!"
    assert msg["From"] == "Acme <hello@acme.test>"
    assert "Hi Jane" in msg.html() and "&lt;42&gt;" in msg.html()  # personalized, escaped in HTML
    assert 'style="color: #111111;"' in msg.html()
    assert "Your code: <42>" in msg.text()
    assert msg.get_content_type() == "multipart/alternative"
    send = workers.wait_until(lambda: TransactionalSend.objects.filter(pk=send_id, status="sent").first())
    assert msg["Message-ID"] == send.message_id
    assert "List-Unsubscribe" not in msg  # transactional mail is not marketing
    r = world["api"].get(f"/transactional/{send_id}")
    assert r.json()["data"]["status"] == "sent" and r.json()["data"]["sentAt"]
    time.sleep(0.5)
    assert smtp_sink.count_for("jane@example.com") == 1


def test_automation_and_campaign_mail_carry_unsubscribe_headers(world, smtp_sink, workers):
    from delivery.services import CampaignRecipient, CampaignSendContext, automation_email_queue, create_batch

    org, template = world["org"], world["template"]
    contacts = [
        Contact.objects.create(organization=org, email=f"c{i}@example.com", first_name=f"C{i}")
        for i in range(3)
    ]
    result = automation_email_queue(
        organization_id=str(org.pk),
        contact_id=str(contacts[0].pk),
        automation_id=str(uuid.uuid4()),
        email_template_id=str(template.pk),
        subject_override=None,
    )
    assert result.status == "queued"
    campaign_id = str(uuid.uuid4())
    create_batch(
        organization_id=org.pk,
        campaign_id=campaign_id,
        context=CampaignSendContext(
            from_email="hello@acme.test", from_name="Acme", topic_id=str(uuid.uuid4()), topic_name="News"
        ),
        sends=[
            CampaignRecipient(
                contact_id=str(c.pk),
                email=c.email,
                first_name=c.first_name,
                email_template_id=str(template.pk),
            )
            for c in contacts[1:]
        ],
    )
    messages = smtp_sink.wait_for(3, timeout=20)
    by_rcpt = {m.rcpt_tos[0]: m for m in messages}
    auto = by_rcpt["c0@example.com"]
    assert auto["List-Unsubscribe-Post"] == "List-Unsubscribe=One-Click"
    assert auto["Subject"] == "News for C0" and auto["Precedence"] == "bulk"
    for email in ("c1@example.com", "c2@example.com"):
        msg = by_rcpt[email]
        assert msg["List-Unsubscribe"].startswith("<http") and msg["Precedence"] == "bulk"
        assert msg["List-Id"].startswith("News <") and "Acme Inc., 1 Main Street" in msg.html()
    workers.wait_until(lambda: EmailSend.objects.filter(campaign_id=campaign_id, status="sent").count() == 2)
    from delivery.services import campaign_counters

    assert campaign_counters(campaign_id)["sent"] == 2


@pytest.mark.worker_env(DELIVERY_TRANSACTIONAL_RATE="0")
def test_451_twice_then_one_message_after_the_spec_waits(world, smtp_sink, workers):
    smtp_sink.script_for("retry@example.com", ["451", "451", "ok"])
    started = time.monotonic()
    r = world["api"].post(
        "/transactional",
        {"email": "retry@example.com", "slug": "welcome", "dataVariables": {"firstName": "R", "code": "1"}},
    )
    assert r.status_code == 202
    [msg] = smtp_sink.wait_for(1, timeout=30)
    attempts = smtp_sink.attempts
    assert [a.outcome for a in attempts] == ["rejected_data", "rejected_data", "accepted"]
    assert msg.received_at - started >= 6.0  # waits of 1 s and 5 s between the attempts
    send_id = r.json()["data"]["transactionalEmailId"]
    workers.wait_until(lambda: TransactionalSend.objects.filter(pk=send_id, status="sent").exists())


PACER_SCRIPT = r"""
import json, os, sys, django
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "owlat.settings")
django.setup()
from delivery.worker import Pacer
clock = {"now": 1000.0}
def sleep(seconds):
    clock["now"] += seconds
pacer = Pacer("campaign", rate=float(sys.argv[1]), sleep=sleep, clock=lambda: clock["now"])
for _ in range(int(sys.argv[2])):
    pacer()
print(json.dumps({"end": clock["now"]}))
"""


def test_pacing_with_an_injected_clock_across_two_processes(db):
    """Two processes each take 60 tokens from the campaign pool's bucket (20/s, burst one second) on a shared
    virtual clock: together they need (120 − 20) / 20 = 5 virtual seconds. A limiter per process would let
    each finish after (60 − 20) / 20 = 2 s."""
    env = worker_environment()
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", PACER_SCRIPT, "20", "60"],
            cwd=BASE_DIR,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    ends = []
    for proc in procs:
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
        ends.append(json.loads(out.strip().splitlines()[-1])["end"] - 1000.0)
    assert max(ends) == pytest.approx(5.0, abs=0.15)
