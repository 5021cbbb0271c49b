"""End to end: pause, resume and cancel of a campaign being sent by real worker processes to the real loopback
SMTP sink (campaign pool paced at 40 messages a second so the send lasts long enough to act on).

- A paused campaign sends nothing more once the messages on the wire are through (within 5 s); resumed, it
  reaches every contact exactly once and ends `sent`.
- A cancelled campaign stops for good: nothing more arrives, its waiting rows end `cancelled`, and sent plus
  cancelled (plus outcome-unknown) is the audience.
"""

from __future__ import annotations

import collections
import time

import pytest

from campaigns.models import Campaign
from delivery.models import EmailSend
from owlat.permissions import Authority

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.django_db(transaction=True),
    pytest.mark.worker_env(DELIVERY_CAMPAIGN_RATE=40),
]

SYSTEM = Authority.system("test")
N = 400
SETTLE = 5.0  # the bound: a pause takes effect within 5 s


@pytest.fixture
def world():
    from campaigns.services import campaign_create
    from owlat.models import Contact, ContactTopic, Topic
    from templates.models import EmailTemplate
    from testsupport.world import sending_organization

    org = sending_organization("Acme", "acme.test", sender="news", postal_address="Acme Inc., 1 Main Street")
    topic = Topic.objects.create(organization=org, name="Newsletter", require_double_opt_in=False)
    template = EmailTemplate.objects.create(
        organization=org, name="T", subject="Hello {{firstName}}", html_content="<p>Hello {{firstName}}</p>"
    )
    contacts = Contact.objects.bulk_create(
        [Contact(organization=org, email=f"p{i:04d}@example.com") for i in range(N)]
    )
    ContactTopic.objects.bulk_create(
        [ContactTopic(organization=org, contact=c, topic=topic) for c in contacts]
    )
    campaign = campaign_create(
        organization_id=org.pk,
        actor="user-1",
        authority=SYSTEM,
        fields={
            "name": "Paced",
            "email_template_id": template.pk,
            "from_email": "news@acme.test",
            "audience": {"kind": "topic", "topicId": str(topic.pk)},
        },
    )
    return {"org": org, "campaign": campaign, "expected": {c.email for c in contacts}}


def _act(world, action):
    from campaigns import services

    fn = {
        "send": services.campaign_send_now,
        "pause": services.campaign_pause,
        "resume": services.campaign_resume,
        "cancel": services.campaign_cancel,
    }[action]
    out = fn(
        campaign_id=world["campaign"].pk, organization_id=world["org"].pk, actor="user-1", authority=SYSTEM
    )
    assert out.ok, out


def _received(sink) -> collections.Counter:
    return collections.Counter(rcpt for m in list(sink.messages) for rcpt in m.rcpt_tos)


def test_pause_stops_and_resume_finishes_without_duplicates(world, smtp_sink, workers):
    _act(world, "send")
    workers.wait_until(lambda: len(smtp_sink.messages) >= 60, timeout=120, interval=0.05)
    _act(world, "pause")
    time.sleep(SETTLE)
    paused_count = len(smtp_sink.messages)
    time.sleep(4)  # paused: nothing more leaves
    assert len(smtp_sink.messages) == paused_count
    assert paused_count < N, "the send finished before the pause: raise N or lower the rate"
    campaign_id = world["campaign"].pk
    assert Campaign.objects.get(pk=campaign_id).status == "paused"
    _act(world, "resume")
    workers.wait_until(
        lambda: Campaign.objects.get(pk=campaign_id).status == "sent", timeout=300, interval=0.5
    )
    time.sleep(1)
    received = _received(smtp_sink)
    assert set(received) == world["expected"] and max(received.values()) == 1


def test_cancel_stops_for_good(world, smtp_sink, workers):
    from campaigns.completion import reconcile_sending_campaigns
    from delivery.reaper import reap_stuck_sends

    _act(world, "send")
    workers.wait_until(lambda: len(smtp_sink.messages) >= 60, timeout=120, interval=0.05)
    _act(world, "cancel")
    time.sleep(SETTLE)
    count = len(smtp_sink.messages)
    reap_stuck_sends(apply=True)  # the sweep hands nothing of a cancelled campaign out again
    reconcile_sending_campaigns()
    time.sleep(4)
    assert len(smtp_sink.messages) == count < N
    campaign_id = world["campaign"].pk
    assert Campaign.objects.get(pk=campaign_id).status == "cancelled"
    rows = EmailSend.objects.filter(campaign_id=campaign_id)
    statuses = collections.Counter(rows.values_list("status", flat=True))
    unknown = rows.filter(status="queued", outcome_unknown=True).count()
    received = _received(smtp_sink)
    assert max(received.values()) == 1
    assert statuses["sent"] == len(received)
    assert statuses["cancelled"] > 0
    # every row is sent, cancelled, or (D-07) outcome-unknown: none is left waiting
    assert statuses["queued"] == unknown
    assert statuses["sent"] + statuses["cancelled"] + unknown == rows.count()
