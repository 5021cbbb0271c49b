"""Follow-ups of a sent campaign: a draft to the non-openers (its own segment, filters frozen) and the retry of
failed rows that never reached a provider (re-queued once, sent once)."""

from __future__ import annotations

import pytest
from django.urls import reverse
from django.utils import timezone

from campaigns import followups
from campaigns.audience import audience_eligible_count
from campaigns.models import Campaign
from campaigns.services import CampaignError
from delivery.models import EmailSend, LocalMessage
from owlat.models import AuditLog, Segment
from owlat.permissions import Authority
from testsupport.queue import drain_queue

from .test_admin import login
from .test_orchestrator import send_and_drain

SYSTEM = Authority.system("test")


@pytest.fixture
def sent(make_campaign, org, topic, make_contact):
    # Given a campaign sent to three members of the topic, one of whom opened it
    for name in ("Ann", "Bob", "Cem"):
        make_contact(topic=topic, first_name=name)
    campaign = make_campaign(subject="April news")
    send_and_drain(campaign, org)
    assert campaign.status == "sent"
    rows = {r.contact_first_name: r for r in EmailSend.objects.filter(campaign_id=campaign.pk)}
    EmailSend.objects.filter(pk=rows["Ann"].pk).update(opened_at=timezone.now())
    return campaign, rows


def test_resend_to_non_openers_creates_a_frozen_draft(sent, org):
    campaign, _ = sent
    draft = followups.campaign_resend_to_non_openers(
        campaign=campaign, actor="user-1", authority=SYSTEM, name="April, again", subject="Did you miss this?"
    )
    assert draft.status == "draft" and draft.subject == "Did you miss this?"
    assert draft.email_template_id == campaign.email_template_id
    segment = Segment.objects.get(pk=draft.audience["segmentId"], organization=org)
    assert draft.audience["frozenFilters"] == segment.filters == followups.non_opener_filters(campaign)
    assert segment.cached_count == 2
    assert audience_eligible_count(org.pk, draft.audience) == 2  # Bob and Cem
    assert AuditLog.objects.filter(action="campaign.followup_created", resource_id=str(draft.pk)).exists()
    # When the draft is sent, only the non-openers get it
    send_and_drain(draft, org)
    names = set(EmailSend.objects.filter(campaign_id=draft.pk).values_list("contact_first_name", flat=True))
    assert names == {"Bob", "Cem"}


def test_follow_ups_need_a_sent_campaign(make_campaign):
    draft = make_campaign()
    with pytest.raises(CampaignError, match="Only a sent campaign"):
        followups.campaign_resend_to_non_openers(
            campaign=draft, actor="u", authority=SYSTEM, name="x", subject=None
        )
    with pytest.raises(CampaignError, match="Only a sent campaign"):
        followups.campaign_retry_failed(campaign=draft, actor="u", authority=SYSTEM)


def test_retry_failed_requeues_only_transient_failures_once_and_sends_them_once(sent, org):
    campaign, rows = sent
    now = timezone.now()
    # Ann: rate limited before any provider took it; Bob: invalid address; Cem: failed after it was sent
    EmailSend.objects.filter(pk=rows["Ann"].pk).update(
        status="failed", sent_at=None, failed_at=now, error_code="RATE_LIMIT", dispatch_attempts=4
    )
    EmailSend.objects.filter(pk=rows["Bob"].pk).update(
        status="failed", sent_at=None, failed_at=now, error_code="INVALID_RECIPIENT"
    )
    EmailSend.objects.filter(pk=rows["Cem"].pk).update(
        status="failed", failed_at=now, error_code="SERVER_ERROR"
    )
    before = LocalMessage.objects.filter(send_id=rows["Ann"].pk).count()
    assert followups.followup_preview(campaign).retryable_failed == 1
    assert followups.campaign_retry_failed(campaign=campaign, actor="u", authority=SYSTEM) == 1
    assert followups.campaign_retry_failed(campaign=campaign, actor="u", authority=SYSTEM) == 0  # idempotent
    ann = EmailSend.objects.get(pk=rows["Ann"].pk)
    assert ann.status == "queued" and ann.error_code is None and ann.dispatch_attempts == 0
    drain_queue(max_tasks=100)
    ann.refresh_from_db()
    assert ann.status == "sent" and ann.sent_at is not None
    assert LocalMessage.objects.filter(send_id=ann.pk).count() == before + 1
    assert followups.campaign_retry_failed(campaign=campaign, actor="u", authority=SYSTEM) == 0
    statuses = dict(
        EmailSend.objects.filter(campaign_id=campaign.pk).values_list("contact_first_name", "status")
    )
    assert statuses == {"Ann": "sent", "Bob": "failed", "Cem": "failed"}
    assert (
        AuditLog.objects.filter(action="campaign.failed_retried", resource_id=str(campaign.pk)).count() == 1
    )


def test_follow_up_pages_in_the_admin(client, django_user_model, org, sent):
    campaign, rows = sent
    login(client, django_user_model, org)
    report = client.get(reverse("admin:campaigns_campaign_report", args=[campaign.pk])).content.decode()
    assert "Resend to non-openers" in report and "Retry failed sends" in report
    url = reverse("admin:campaigns_campaign_non_openers", args=[campaign.pk])
    page = client.get(url).content.decode()
    assert "<strong>2</strong> recipients" in page and "April news" in page
    r = client.post(url, {"name": "", "subject": ""})
    assert r.status_code == 200 and "This field is required" in r.content.decode()
    r = client.post(url, {"name": "To non-openers", "subject": ""})
    draft = Campaign.objects.get(name="To non-openers")
    assert r.status_code == 302 and r["Location"] == reverse(
        "admin:campaigns_campaign_change", args=[draft.pk]
    )
    assert draft.subject == "April news"
    EmailSend.objects.filter(pk=rows["Bob"].pk).update(
        status="failed", sent_at=None, error_code="SERVER_ERROR"
    )
    url = reverse("admin:campaigns_campaign_retry_failed", args=[campaign.pk])
    assert "<strong>1</strong> send failed" in client.get(url).content.decode()
    r = client.post(url, follow=True)
    assert "Re-queued 1 failed send(s)." in r.content.decode()
    assert EmailSend.objects.get(pk=rows["Bob"].pk).status == "queued"
