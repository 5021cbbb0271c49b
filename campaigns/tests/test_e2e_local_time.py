"""End to end, CMP-34: a recipient-local campaign sent by real worker processes to the real loopback SMTP sink.

Recipients in UTC are due at the next whole minute, recipients in Tokyo at the same wall-clock time there
(about 15 hours later). The orphan sweep and the stuck-walk watchdog run with a clock 11 minutes ahead while
the UTC rows are still waiting: they may hand rows to the pool, but no mail leaves before its instant — the UTC
mail arrives at its minute, not before, and the Tokyo mail not at all.
"""

from __future__ import annotations

import datetime as dt
import time

import pytest
from django.utils import timezone

from delivery.models import EmailSend
from owlat.permissions import Authority

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

SYSTEM = Authority.system("test")
N_PER_ZONE = 5


@pytest.fixture
def world(settings):
    from campaigns.services import campaign_create
    from owlat.models import Contact, ContactTopic, Topic
    from templates.models import EmailTemplate
    from testsupport.world import sending_organization

    org = sending_organization("Acme", "acme.test", sender="news", postal_address="Acme Inc., 1 Main Street")
    topic = Topic.objects.create(organization=org, name="Newsletter", require_double_opt_in=False)
    template = EmailTemplate.objects.create(
        organization=org, name="T", subject="Hello {{firstName}}", html_content="<p>Hello {{firstName}}</p>"
    )
    zones = {"UTC": [], "Asia/Tokyo": []}
    for zone, emails in zones.items():
        for i in range(N_PER_ZONE):
            contact = Contact.objects.create(
                organization=org, email=f"{zone.split('/')[-1].lower()}{i}@example.com", timezone=zone
            )
            ContactTopic.objects.create(organization=org, contact=contact, topic=topic)
            emails.append(contact.email)
    campaign = campaign_create(
        organization_id=org.pk,
        actor="user-1",
        authority=SYSTEM,
        fields={
            "name": "Local",
            "email_template_id": template.pk,
            "from_email": "news@acme.test",
            "audience": {"kind": "topic", "topicId": str(topic.pk)},
        },
    )
    return {"org": org, "campaign": campaign, "zones": zones}


def test_local_time_mail_leaves_at_each_zones_instant(world, smtp_sink, workers):
    from campaigns.models import Campaign, CampaignSendJob
    from campaigns.services import campaign_schedule
    from campaigns.walker import stuck_walks_redrive
    from delivery.reaper import reap_stuck_sends

    now = timezone.now()
    target = (now + dt.timedelta(seconds=70)).replace(second=0, microsecond=0)  # 10 … 70 s ahead
    campaign = world["campaign"]
    outcome = campaign_schedule(
        campaign_id=campaign.pk,
        organization_id=world["org"].pk,
        actor="user-1",
        scheduled_at=now + dt.timedelta(seconds=2),
        use_recipient_timezone=True,
        scheduled_hour=target.hour,
        scheduled_minute=target.minute,
        authority=SYSTEM,
    )
    assert outcome.ok, outcome
    workers.wait_until(
        lambda: CampaignSendJob.objects.filter(campaign=campaign, phase="done").exists(),
        timeout=60,
        interval=0.2,
    )
    rows = EmailSend.objects.filter(campaign_id=campaign.pk)
    tokyo_instant = (target + dt.timedelta(hours=15)).astimezone(dt.UTC)
    assert dict(rows.values_list("contact_email", "not_before")) == {
        **dict.fromkeys(world["zones"]["UTC"], target),
        **dict.fromkeys(world["zones"]["Asia/Tokyo"], tokyo_instant),
    }
    assert timezone.now() < target, "the walk took longer than the test's margin"
    # the minute crons, with a clock 11 minutes ahead, while every row is still waiting for its instant
    later = timezone.now() + dt.timedelta(minutes=11)
    reap_stuck_sends(apply=True, now=later)
    stuck_walks_redrive(now=later)
    offset = time.time() - time.monotonic()  # sink times are monotonic
    smtp_sink.wait_for(N_PER_ZONE, timeout=(target - timezone.now()).total_seconds() + 60)
    time.sleep(3)  # anything sent too early or to Tokyo would have arrived by now
    received = {rcpt: m.received_at + offset for m in list(smtp_sink.messages) for rcpt in m.rcpt_tos}
    assert set(received) == set(world["zones"]["UTC"])
    earliest = min(received.values())
    assert earliest >= target.timestamp(), f"sent {target.timestamp() - earliest:.1f} s early"
    assert rows.filter(contact_email__in=world["zones"]["Asia/Tokyo"], status="queued").count() == N_PER_ZONE
    assert Campaign.objects.get(pk=campaign.pk).status == "sending"
