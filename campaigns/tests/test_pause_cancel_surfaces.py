"""Pause, resume and cancel through the surfaces an operator uses (the API over HTTP, the `campaign_transition`
command) and against the A/B phases: a remainder or an automatic winner that finds the campaign paused acts once
it is resumed. Tasks run in-process (`drain_queue`) with the `local` provider."""

from __future__ import annotations

import datetime as dt
import io

import pytest
from django.core.management import call_command
from django.utils import timezone

from campaigns import services
from campaigns.models import Campaign, CampaignSendJob
from delivery.models import EmailSend, LocalMessage
from owlat.permissions import Authority
from testsupport.api import ApiClient, make_key, refill_bucket
from testsupport.queue import drain_queue

SYSTEM = Authority.system("test")
OWNER = Authority.member("owner")


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
    assert services.campaign_send_now(
        campaign_id=campaign.pk, organization_id=org.pk, actor="user-1", authority=SYSTEM
    ).ok
    assert start_campaign_send(campaign.pk) == "send job opened"
    job = CampaignSendJob.objects.get(campaign=campaign)
    assert resolve_campaign_page(campaign.pk, "", job.hop_token).startswith("page 1")
    return campaign


def _rows(campaign):
    return EmailSend.objects.filter(campaign_id=campaign.pk)


def _statuses(campaign) -> set[str]:
    return set(_rows(campaign).values_list("status", flat=True))


def test_pause_resume_and_cancel_through_the_api(walking, org):
    api_key, raw = make_key(org, ["campaigns:read", "campaigns:send"])
    api = ApiClient(raw)

    def post(verb):
        refill_bucket(api_key)
        return api.post(f"/campaigns/{walking.pk}/{verb}")

    r = post("pause")
    assert r.status_code == 200, r.content
    assert r.json()["transition"] == {"applied": "transitioned", "from": "sending", "to": "paused"}
    assert r.json()["data"]["status"] == "paused"
    drain_queue(max_tasks=5000)
    assert not LocalMessage.objects.exists()
    r = post("pause")
    assert r.status_code == 422 and r.json()["error"]["category"] == "invalid_state"
    r = post("resume")
    assert r.status_code == 200 and r.json()["transition"]["to"] == "sending"
    drain_queue(max_tasks=5000)
    assert Campaign.objects.get(pk=walking.pk).status == "sent"
    assert _rows(walking).count() == 30 and _statuses(walking) == {"sent"}
    assert LocalMessage.objects.count() == 30
    r = post("cancel")
    assert r.status_code == 422 and r.json()["error"]["data"]["from"] == "sent"


def test_cancel_of_a_paused_campaign_through_the_api(walking, org):
    api_key, raw = make_key(org, ["campaigns:send", "campaigns:read"])
    api = ApiClient(raw)
    assert api.post(f"/campaigns/{walking.pk}/pause").status_code == 200
    stats = api.get(f"/campaigns/{walking.pk}/stats").json()["data"]
    assert (stats["queued"], stats["cancelled"]) == (10, 0)
    refill_bucket(api_key)
    refill_bucket(api_key)
    r = api.post(f"/campaigns/{walking.pk}/cancel")
    assert r.status_code == 200 and r.json()["transition"] == {
        "applied": "transitioned",
        "from": "paused",
        "to": "cancelled",
    }
    drain_queue(max_tasks=5000)
    assert _rows(walking).count() == 10 and _statuses(walking) == {"cancelled"}
    assert not LocalMessage.objects.exists()
    refill_bucket(api_key)
    stats = api.get(f"/campaigns/{walking.pk}/stats").json()["data"]
    assert (stats["queued"], stats["cancelled"], stats["sent"]) == (0, 10, 0)


def test_the_admin_confirmation_shows_the_counts_and_the_post_acts(
    walking, org, client, django_user_model, settings
):
    """The confirmation page (a GET changes nothing) names how many messages wait and how many were sent; the
    confirmed POST pauses, resumes or cancels the send."""
    from django.urls import reverse

    staff = django_user_model.objects.create_superuser("root", "root@example.com", "pw")
    client.force_login(staff)

    def url(verb):
        return reverse("admin:campaigns_campaign_transition", args=[walking.pk, verb])

    page = client.get(url("pause")).content.decode()
    assert "No more of its 10 waiting messages" in page
    assert Campaign.objects.get(pk=walking.pk).status == "sending"
    assert client.post(url("pause")).status_code == 200  # a POST not from the page shows the page
    assert Campaign.objects.get(pk=walking.pk).status == "sending"
    assert client.post(url("pause"), {"post": "yes"}).status_code == 302
    assert Campaign.objects.get(pk=walking.pk).status == "paused"
    drain_queue(max_tasks=5000)
    assert "Its 10 waiting messages go out again" in client.get(url("resume")).content.decode()
    assert client.post(url("resume"), {"post": "yes"}).status_code == 302
    drain_queue(max_tasks=2)  # one pool job and the walk's next hop
    sent = _rows(walking).filter(status="sent").count()
    queued = _rows(walking).filter(status="queued").count()
    page = client.get(url("cancel")).content.decode()
    assert f"Its {queued} messages not yet handed to the provider are never sent" in page
    assert f"the {sent} already sent stay sent" in page
    assert client.post(url("cancel"), {"post": "yes"}).status_code == 302
    drain_queue(max_tasks=5000)
    assert Campaign.objects.get(pk=walking.pk).status == "cancelled"
    assert _rows(walking).filter(status="cancelled").count() >= queued
    assert LocalMessage.objects.count() == _rows(walking).filter(status="sent").count() < 30


def _command(*args) -> str:
    out = io.StringIO()
    call_command("campaign_transition", *args, stdout=out, stderr=io.StringIO())
    return out.getvalue()


def test_pause_resume_and_cancel_from_the_command_line(walking):
    campaign_id = str(walking.pk)
    assert "would move sending → paused" in _command(campaign_id, "pause", "--dry-run")
    assert Campaign.objects.get(pk=walking.pk).status == "sending"
    assert "transitioned: sending → paused" in _command(campaign_id, "pause")
    drain_queue(max_tasks=5000)
    assert not LocalMessage.objects.exists()
    assert "transitioned: paused → sending" in _command(campaign_id, "resume")
    drain_queue(max_tasks=2)  # the resumed walk's next hop: the second page is walked, the third not yet
    assert "transitioned: sending → cancelled" in _command(campaign_id, "cancel")
    drain_queue(max_tasks=5000)
    assert Campaign.objects.get(pk=walking.pk).status == "cancelled"
    statuses = _statuses(walking)
    assert "queued" not in statuses and "cancelled" in statuses
    assert LocalMessage.objects.count() == _rows(walking).filter(status="sent").count() < 30


def _ab_campaign(make_campaign, org, topic, make_contact, criteria="manual", duration=None):
    """A sending A/B campaign of 40 contacts whose test cohort has been mailed (`testing`)."""
    from campaigns.abtest import ab_enable

    for _ in range(40):
        make_contact(topic=topic)
    campaign = make_campaign()
    cfg = {"testType": "subject", "variantBSubject": "B", "splitPercentage": 20, "winnerCriteria": criteria}
    if duration:
        cfg["testDuration"] = duration
    assert ab_enable(campaign=campaign, config=cfg, actor="u", authority=OWNER).ok
    assert services.campaign_send_now(
        campaign_id=campaign.pk, organization_id=org.pk, actor="user-1", authority=SYSTEM
    ).ok
    drain_queue(max_tasks=5000, dispatch_due=False)
    campaign.refresh_from_db()
    assert (campaign.status, campaign.ab_test_status) == ("sending", "testing")
    assert 0 < LocalMessage.objects.count() < 40
    return campaign


def test_a_remainder_that_finds_the_campaign_paused_runs_on_resume(make_campaign, org, topic, make_contact):
    """Given a paused A/B campaign whose winner is declared while it is paused, then the remainder mails nobody
    until the campaign is resumed; resumed, every contact gets exactly one message and the campaign ends sent."""
    from campaigns.abtest import ab_declare_winner
    from campaigns.orchestrator import send_winner_to_remainder

    campaign = _ab_campaign(make_campaign, org, topic, make_contact)
    tested = LocalMessage.objects.count()
    assert services.campaign_pause(
        campaign_id=campaign.pk, organization_id=org.pk, actor="user-1", authority=SYSTEM
    ).ok
    assert ab_declare_winner(campaign_id=campaign.pk, winner="B", actor="u", authority=OWNER).ok
    drain_queue(max_tasks=5000)
    assert send_winner_to_remainder(campaign.pk) == "skipped: campaign is paused"
    assert LocalMessage.objects.count() == tested
    assert CampaignSendJob.objects.get(campaign=campaign).variant_mode == "ab_test"
    assert services.campaign_resume(
        campaign_id=campaign.pk, organization_id=org.pk, actor="user-1", authority=SYSTEM
    ).ok
    drain_queue(max_tasks=5000)
    campaign.refresh_from_db()
    assert campaign.status == "sent" and campaign.ab_winner == "B"
    assert _rows(campaign).count() == 40 and _statuses(campaign) == {"sent"}
    assert LocalMessage.objects.count() == 40
    assert len(set(_rows(campaign).values_list("contact_id", flat=True))) == 40


def test_an_automatic_winner_waits_while_the_campaign_is_paused(make_campaign, org, topic, make_contact):
    """Given an open-rate test of 1 hour whose window ends while the campaign is paused, then no winner is
    declared while paused (the auto-winner asks again 5 minutes later); after resume it decides and the
    remainder is mailed."""
    from campaigns.abtest import PAUSED_RETRY, ab_auto_declare
    from owlat.jobs import dispatch_due_tasks
    from owlat.models import DueTask

    campaign = _ab_campaign(make_campaign, org, topic, make_contact, criteria="open_rate", duration=1)
    assert services.campaign_pause(
        campaign_id=campaign.pk, organization_id=org.pk, actor="user-1", authority=SYSTEM
    ).ok
    later = timezone.now() + dt.timedelta(hours=1, minutes=1)
    assert ab_auto_declare(campaign.pk) == "deferred: campaign paused"
    campaign.refresh_from_db()
    assert campaign.ab_winner is None and campaign.ab_test_status == "testing"
    retry = DueTask.objects.filter(func__endswith="campaign_ab_auto_winner_task").order_by("-due_at").first()
    assert retry is not None and retry.due_at >= timezone.now() + PAUSED_RETRY - dt.timedelta(seconds=5)
    assert services.campaign_resume(
        campaign_id=campaign.pk, organization_id=org.pk, actor="user-1", authority=SYSTEM
    ).ok
    dispatch_due_tasks(now=later + PAUSED_RETRY)
    drain_queue(max_tasks=5000, dispatch_due=False)
    campaign.refresh_from_db()
    assert campaign.ab_winner in ("A", "B") and campaign.status == "sent"
    assert _rows(campaign).count() == 40 and LocalMessage.objects.count() == 40
