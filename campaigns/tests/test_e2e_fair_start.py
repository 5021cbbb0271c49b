"""End to end: a campaign started while another organization's large send fills the campaign pool's queue starts,
walks its audience and is through while most of the large send still waits. Its orchestrator and page hops run on
the control queue (`CAMPAIGN_CONTROL_QUEUE`), not behind the pool's queued jobs; the fair pool then serves its
rows beside the large campaign's. Real worker processes, the real loopback SMTP sink."""

from __future__ import annotations

import time

import pytest

from owlat.permissions import Authority

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.django_db(transaction=True),
    pytest.mark.worker_env(DELIVERY_CAMPAIGN_RATE=60),
]

LARGE = 900  # 15 s at 60 messages a second
SMALL = 80


def small_campaign(org):
    """A campaign of `org` to a topic of SMALL contacts; the campaign and their addresses."""
    from campaigns.services import campaign_create
    from owlat.models import Contact, ContactTopic, Topic
    from templates.models import EmailTemplate

    topic = Topic.objects.create(organization=org, name="News")
    contacts = Contact.objects.bulk_create(
        [Contact(organization=org, email=f"small{i:04d}@example.com") for i in range(SMALL)]
    )
    ContactTopic.objects.bulk_create(
        [ContactTopic(organization=org, contact=c, topic=topic) for c in contacts]
    )
    template = EmailTemplate.objects.create(
        organization=org, name="T", subject="Small news", html_content="<p>Hello from the small one</p>"
    )
    campaign = campaign_create(
        organization_id=org.pk,
        actor="user-1",
        authority=Authority.member("editor"),
        fields={
            "name": "Small",
            "email_template_id": template.pk,
            "from_email": "news@small.test",
            "from_name": "Small",
            "audience": {"kind": "topic", "topicId": str(topic.pk)},
        },
    )
    return campaign, {c.email for c in contacts}


def received(sink) -> list[str]:
    return [rcpt for m in list(sink.messages) for rcpt in m.rcpt_tos]


def large_while_small(got: list[str], small: set[str]) -> int:
    """How many other rows were accepted between the small campaign's first and last acceptance: the fair
    pool lets its rows into the running jobs a part at a time, so only the large send's floor (3 of each part
    of 25) and the rows already on their connections go out beside it (first-in-first-out, or an equal split
    per job, would send at least as many of the large one's rows as of its own)."""
    at = [i for i, rcpt in enumerate(got) if rcpt in small]
    return sum(1 for rcpt in got[at[0] : at[-1] + 1] if rcpt not in small)


def test_a_campaign_started_during_a_large_send_is_walked_and_sent_beside_it(smtp_sink, workers):
    from campaigns.models import Campaign
    from campaigns.services import campaign_send_now
    from testsupport.world import pool_campaign_rows, sending_organization

    large_org = sending_organization("Large", "large.test", sender="news", postal_address="Large Inc.")
    small_org = sending_organization("Small", "small.test", sender="news", postal_address="Small Inc.")
    campaign, small = small_campaign(small_org)
    large = pool_campaign_rows(large_org, "large", LARGE)  # ~18 pool jobs queued ahead
    workers.wait_until(lambda: len(smtp_sink.messages) >= 30, timeout=120, interval=0.05)
    started = time.monotonic()
    outcome = campaign_send_now(
        authority=Authority.system("test"), campaign_id=campaign.pk, organization_id=small_org.pk, actor="u"
    )
    assert outcome.ok, outcome
    workers.wait_until(lambda: small <= set(received(smtp_sink)), timeout=240, interval=0.1)
    small_took = time.monotonic() - started
    large_done = len(large & set(received(smtp_sink)))
    beside = large_while_small(received(smtp_sink), small)
    print(
        f"started campaign through in {small_took:.1f} s; the large send had {large_done}/{LARGE} by then, "
        f"{beside} of them between the small one's first and last message"
    )
    assert large_done < LARGE // 2  # behind the pool's queue it would start only after the large send's jobs
    assert beside <= SMALL // 2  # the started one was sent ahead of the large one, not beside it
    workers.wait_until(lambda: len(smtp_sink.messages) >= LARGE + SMALL, timeout=300, interval=0.5)
    workers.wait_until(
        lambda: Campaign.objects.get(pk=campaign.pk).status == "sent", timeout=120, interval=0.5
    )
    got = received(smtp_sink)
    assert set(got) == large | small and len(got) == LARGE + SMALL  # everyone, nobody twice
