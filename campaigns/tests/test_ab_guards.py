"""A/B tests that lose nobody: the window starts with the test-cohort walk (after the scan and any review), the
auto-winner and the remainder act only when the campaign and its test expect them, a winner declared during the
test-cohort walk takes effect after it, and the remainder is everyone without a send row. Tasks run in-process
(`drain_queue`) with the `local` provider."""

from __future__ import annotations

import datetime as dt

import pytest
from django.utils import timezone

from campaigns.models import CampaignSendJob
from campaigns.services import campaign_send_now
from delivery.models import EmailSend, LocalMessage
from owlat.permissions import Authority
from testsupport.queue import drain_queue

SYSTEM = Authority.system("test")
OWNER = Authority.member("owner")


def _send(campaign, org):
    out = campaign_send_now(authority=SYSTEM, campaign_id=campaign.pk, organization_id=org.pk, actor="user-1")
    assert out.ok, out


def _rows(campaign):
    return EmailSend.objects.filter(campaign_id=campaign.pk)


def test_a_review_longer_than_the_window_does_not_decide_the_test(
    make_campaign, org, template, topic, make_contact
):
    """Given an open-rate test of 1 hour held for review for 3 hours, then no winner is declared meanwhile; after
    approval the test cohort is mailed and the window runs from then."""
    from campaigns.abtest import ab_auto_declare, ab_enable
    from campaigns.review import review_approve
    from owlat.jobs import dispatch_due_tasks
    from owlat.models import DueTask

    for _ in range(40):
        make_contact(topic=topic)
    template.html_content = '<p>Hello</p><a href="https://bit.ly/x">Go</a>'
    template.subject = "HELLO THERE!!!"  # suspicious: held for review
    template.save()
    campaign = make_campaign()
    cfg = {
        "testType": "subject",
        "variantBSubject": "B",
        "splitPercentage": 20,
        "winnerCriteria": "open_rate",
        "testDuration": 1,
    }
    assert ab_enable(campaign=campaign, config=cfg, actor="u", authority=OWNER).ok
    _send(campaign, org)
    drain_queue(max_tasks=100)
    campaign.refresh_from_db()
    assert (campaign.status, campaign.ab_test_status) == ("pending_review", "pending")
    assert not DueTask.objects.filter(func__endswith="campaign_ab_auto_winner_task").exists()
    dispatch_due_tasks(now=timezone.now() + dt.timedelta(hours=3))
    assert ab_auto_declare(campaign.pk) == "skipped: not testing"
    approved_at = timezone.now()
    assert review_approve(campaign_id=campaign.pk, actor="staff", authority=Authority.platform_staff()).ok
    drain_queue(max_tasks=5000)
    campaign.refresh_from_db()
    assert (campaign.status, campaign.ab_test_status, campaign.ab_winner) == ("sending", "testing", None)
    assert CampaignSendJob.objects.get(campaign=campaign).variant_mode == "ab_test"
    assert set(_rows(campaign).values_list("ab_variant", flat=True)) == {"A", "B"}
    due = DueTask.objects.get(func__endswith="campaign_ab_auto_winner_task")
    assert due.due_at >= approved_at + dt.timedelta(hours=1)


def test_the_auto_winner_does_nothing_for_a_campaign_no_longer_sending(
    make_campaign, org, topic, make_contact
):
    from campaigns.abtest import ab_auto_declare, ab_enable
    from campaigns.lifecycle import campaign_transition

    for _ in range(10):
        make_contact(topic=topic)
    campaign = make_campaign()
    cfg = {
        "testType": "subject",
        "variantBSubject": "B",
        "splitPercentage": 20,
        "winnerCriteria": "open_rate",
    }
    assert ab_enable(campaign=campaign, config={**cfg, "testDuration": 1}, actor="u", authority=OWNER).ok
    _send(campaign, org)
    drain_queue(max_tasks=5000, dispatch_due=False)
    assert campaign_transition(campaign_id=campaign.pk, to="draft", actor="system:test").ok
    assert ab_auto_declare(campaign.pk) == "skipped: campaign is draft"
    campaign.refresh_from_db()
    assert campaign.ab_winner is None and campaign.ab_test_status == "testing"


@pytest.mark.parametrize("criteria", ["open_rate", "click_rate"])
def test_an_automatic_test_needs_a_duration(org, criteria):
    from campaigns.abtest import DURATION_REQUIRED, AbConfigError, ab_config_clean

    cfg = {"testType": "subject", "variantBSubject": "B", "splitPercentage": 20, "winnerCriteria": criteria}
    for duration in (None, 0, -1, "2"):
        with pytest.raises(AbConfigError) as caught:
            ab_config_clean(org.pk, {**cfg, "testDuration": duration})
        assert (caught.value.field, caught.value.message) == ("testDuration", DURATION_REQUIRED)
    assert ab_config_clean(org.pk, {**cfg, "testDuration": 2})["testDuration"] == 2
    assert "testDuration" not in ab_config_clean(org.pk, {**cfg, "winnerCriteria": "manual"})


def test_a_winner_declared_during_the_test_walk_mails_everyone_once(
    make_campaign, org, topic, make_contact, monkeypatch, settings
):
    """Given a manual test over 60 contacts walked 10 a page, when the winner is declared after the first page,
    then the remainder phase waits for the test walk to end and then mails everyone without a row: every
    contact gets exactly one message, the test cohort its variant, the rest the winner."""
    from campaigns import audience as audience_module
    from campaigns.abtest import (
        ab_declare_winner,
        ab_enable,
        cohort_fraction,
        hash_fraction,
        variant_for_hash,
    )
    from campaigns.orchestrator import send_winner_to_remainder, start_campaign_send
    from campaigns.walker import resolve_campaign_page

    settings.CAMPAIGN_WALK_PAGES_PER_HOP = 1
    monkeypatch.setattr(audience_module, "PAGE_SIZE", 10)
    contacts = [make_contact(topic=topic) for _ in range(60)]
    campaign = make_campaign()
    cfg = {"testType": "subject", "variantBSubject": "B", "splitPercentage": 20, "winnerCriteria": "manual"}
    assert ab_enable(campaign=campaign, config=cfg, actor="u", authority=OWNER).ok
    _send(campaign, org)
    assert start_campaign_send(campaign.pk) == "send job opened"
    job = CampaignSendJob.objects.get(campaign=campaign)
    assert resolve_campaign_page(campaign.pk, "", job.hop_token).startswith("page 1")
    assert ab_declare_winner(campaign_id=campaign.pk, winner="B", actor="u", authority=OWNER).ok
    assert send_winner_to_remainder(campaign.pk) == "deferred: the test cohort is still being walked"
    drain_queue(max_tasks=5000)
    campaign.refresh_from_db()
    assert campaign.status == "sent"
    tf = cohort_fraction(20)
    expected = {
        c.pk: variant_for_hash(hash_fraction(str(campaign.pk), str(c.pk)), tf) or "B" for c in contacts
    }
    assert dict(_rows(campaign).values_list("contact_id", "ab_variant")) == expected
    assert LocalMessage.objects.filter(send_id__in=_rows(campaign).values("pk")).count() == 60
    assert send_winner_to_remainder(campaign.pk) == "skipped: campaign is sent"


def test_the_admin_editor_refuses_an_automatic_test_without_a_duration(
    client, django_user_model, org, template, topic
):
    """The editor names the duration field (its help text says when it is needed) instead of saving a test
    that would never decide."""
    from django.urls import reverse

    from campaigns.abtest import DURATION_REQUIRED
    from campaigns.models import Campaign
    from owlat.models import Membership

    user = django_user_model.objects.create_user(username="ann", password="pw", is_staff=True)
    Membership.objects.create(user=user, organization=org, role="owner")
    client.force_login(user)
    url = reverse("admin:campaigns_campaign_add")
    page = client.get(url)
    assert b"Required unless the winner is chosen manually" in page.content
    data = {
        "name": "April",
        "email_template": str(template.pk),
        "sender": "news@acme.test",
        "from_name": "Acme",
        "audience_kind": "topic",
        "audience_topic": str(topic.pk),
        "archive_enabled": "unknown",
        "ab_enabled": "on",
        "ab_test_type": "subject",
        "ab_variant_b_subject": "B",
        "ab_split_percentage": "20",
        "ab_winner_criteria": "open_rate",
    }
    r = client.post(url, data)
    assert r.status_code == 200 and DURATION_REQUIRED.encode() in r.content
    assert r.context["adminform"].form.errors["ab_test_duration"] == [DURATION_REQUIRED]
    assert not Campaign.objects.filter(name="April").exists()
    r = client.post(url, {**data, "ab_test_duration": "2"})
    assert r.status_code == 302
    assert Campaign.objects.get(name="April").ab_config()["testDuration"] == 2
