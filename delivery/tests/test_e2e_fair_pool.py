"""End to end: the campaign pool serves organizations round-robin. Real worker processes send one
organization's large batch of campaign rows to the real loopback SMTP sink (the pool paced, so the send lasts);
a small campaign of another organization queued meanwhile is through while most of the large one still
waits, instead of queuing behind all of it. The rows are handed to the pool as the campaign walk hands them
(`create_batch` with `enqueue=True`)."""

from __future__ import annotations

import time
import uuid

import pytest

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.django_db(transaction=True),
    pytest.mark.worker_env(DELIVERY_CAMPAIGN_RATE=60),
]

LARGE = 900  # 15 s at 60 messages a second
SMALL = 30


def queue_campaign(org, prefix: str, size: int) -> set[str]:
    """`size` campaign rows of a new campaign of `org`, handed to the campaign pool; their addresses."""
    from delivery.services import CampaignRecipient, CampaignSendContext, create_batch
    from owlat.models import Contact
    from templates.models import EmailTemplate

    template = EmailTemplate.objects.create(
        organization=org, name="T", subject="Hello {{firstName}}", html_content="<p>Hello {{firstName}}</p>"
    )
    contacts = Contact.objects.bulk_create(
        [Contact(organization=org, email=f"{prefix}{i:04d}@example.com") for i in range(size)]
    )
    create_batch(
        organization_id=org.pk,
        campaign_id=str(uuid.uuid4()),
        context=CampaignSendContext(from_email=f"news@{prefix}.test", from_name=org.name, topic_id=None),
        sends=[
            CampaignRecipient(
                contact_id=str(c.pk),
                email=c.email,
                first_name="",
                last_name="",
                email_template_id=str(template.pk),
            )
            for c in contacts
        ],
        enqueue=True,
    )
    return {c.email for c in contacts}


def received(sink) -> list[str]:
    return [rcpt for m in list(sink.messages) for rcpt in m.rcpt_tos]


def test_a_small_campaign_is_not_queued_behind_another_organizations_large_one(smtp_sink, workers):
    from testsupport.world import sending_organization

    large_org = sending_organization("Large", "large.test", sender="news", postal_address="Large Inc.")
    small_org = sending_organization("Small", "small.test", sender="news", postal_address="Small Inc.")
    large = queue_campaign(large_org, "large", LARGE)
    workers.wait_until(lambda: len(smtp_sink.messages) >= 30, timeout=120, interval=0.05)
    small = queue_campaign(small_org, "small", SMALL)
    started = time.monotonic()
    workers.wait_until(lambda: small <= set(received(smtp_sink)), timeout=240, interval=0.1)
    small_took = time.monotonic() - started
    large_done = len(large & set(received(smtp_sink)))
    print(f"small campaign through in {small_took:.1f} s; the large one had {large_done}/{LARGE} by then")
    assert large_done < LARGE // 2  # first-in-first-out would have sent all of the large one first
    workers.wait_until(lambda: len(smtp_sink.messages) >= LARGE + SMALL, timeout=300, interval=0.5)
    time.sleep(1)
    got = received(smtp_sink)
    assert set(got) == large | small and len(got) == LARGE + SMALL  # everyone, nobody twice
