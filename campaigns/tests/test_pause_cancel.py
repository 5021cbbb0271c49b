"""Pause, resume and cancel of a send through the services, with tasks run in-process (`drain_queue`) and the
`local` provider: a paused campaign's walk and pool jobs hand out nothing, resume mails everyone exactly once,
cancel ends the waiting rows `cancelled`; the admin asks for confirmation naming the consequences."""

from __future__ import annotations

import pytest

from campaigns import services
from campaigns.models import Campaign, CampaignSendJob
from delivery.models import EmailSend, LocalMessage
from owlat.permissions import Authority
from testsupport.queue import drain_queue

SYSTEM = Authority.system("test")


def _act(campaign, org, action):
    fn = {
        "send": services.campaign_send_now,
        "pause": services.campaign_pause,
        "resume": services.campaign_resume,
        "cancel": services.campaign_cancel,
    }[action]
    return fn(campaign_id=campaign.pk, organization_id=org.pk, actor="user-1", authority=SYSTEM)


@pytest.fixture
def walking(make_campaign, org, topic, make_contact, monkeypatch, settings):
    """A sending campaign of 30 contacts whose walk (10 a page) has done its first page, pool jobs not run."""
    from campaigns import audience as audience_module
    from campaigns.orchestrator import start_campaign_send
    from campaigns.walker import resolve_campaign_page

    settings.CAMPAIGN_WALK_PAGES_PER_HOP = 1
    monkeypatch.setattr(audience_module, "PAGE_SIZE", 10)
    for _ in range(30):
        make_contact(topic=topic)
    campaign = make_campaign()
    assert _act(campaign, org, "send").ok
    assert start_campaign_send(campaign.pk) == "send job opened"
    job = CampaignSendJob.objects.get(campaign=campaign)
    assert resolve_campaign_page(campaign.pk, "", job.hop_token).startswith("page 1")
    return campaign


def test_paused_sends_nothing_and_resume_mails_everyone_once(walking, org):
    campaign = walking
    assert _act(campaign, org, "pause").ok
    drain_queue(max_tasks=5000)  # the pending hop and pool jobs find the campaign paused
    assert Campaign.objects.get(pk=campaign.pk).status == "paused"
    assert not LocalMessage.objects.exists()
    rows = EmailSend.objects.filter(campaign_id=campaign.pk)
    assert rows.count() == 10 and not rows.filter(claimed_at__isnull=False).exists()
    assert CampaignSendJob.objects.get(campaign=campaign).phase == "resolving"
    assert not _act(campaign, org, "pause").ok  # only a sending campaign can be paused
    assert _act(campaign, org, "resume").ok
    drain_queue(max_tasks=5000)
    campaign.refresh_from_db()
    assert campaign.status == "sent"
    assert rows.count() == 30 and set(rows.values_list("status", flat=True)) == {"sent"}
    assert LocalMessage.objects.count() == 30


def test_cancel_ends_the_waiting_rows_for_good(walking, org):
    campaign = walking
    assert _act(campaign, org, "cancel").ok
    drain_queue(max_tasks=5000)
    assert Campaign.objects.get(pk=campaign.pk).status == "cancelled"
    rows = EmailSend.objects.filter(campaign_id=campaign.pk)
    assert rows.count() == 10 and set(rows.values_list("status", flat=True)) == {"cancelled"}
    assert not LocalMessage.objects.exists()
    assert CampaignSendJob.objects.get(campaign=campaign).phase == "done"
    assert not _act(campaign, org, "resume").ok


def test_admin_confirms_pause_and_cancel_naming_the_consequences(walking, org, client, django_user_model):
    from django.urls import reverse

    staff = django_user_model.objects.create_superuser("root", "root@example.com", "pw")
    client.force_login(staff)
    url = reverse("admin:campaigns_campaign_transition", args=[walking.pk, "cancel"])
    page = client.get(url)
    assert page.status_code == 200
    assert b"never sent" in page.content and b"cannot be undone" in page.content
    assert Campaign.objects.get(pk=walking.pk).status == "sending"  # the GET changed nothing
    assert (
        b"Pause"
        in client.get(reverse("admin:campaigns_campaign_transition", args=[walking.pk, "pause"])).content
    )
