"""The campaigns' "Needs attention" items on the admin home: campaigns held for review (CMP-12) and send jobs
with no progress (CMP-36), scoped to the member's organization, every organization for platform staff."""

from __future__ import annotations

import datetime as dt

import pytest
from django.urls import reverse
from django.utils import timezone

from campaigns.models import CampaignSendJob
from campaigns.services import campaign_send_now
from campaigns.tests.test_admin import login
from owlat.permissions import Authority
from testsupport.queue import drain_queue

SYSTEM = Authority.system("test")


@pytest.fixture
def held(org, make_campaign, template, topic, make_contact):
    """A campaign the content scan holds in `pending_review` (reached through the real send path)."""
    template.html_content = '<p>Hi</p><a href="https://bit.ly/x">Go</a>'
    template.subject = "HELLO THERE!!!"
    template.save()
    make_contact(topic=topic)
    campaign = make_campaign()
    assert campaign_send_now(authority=SYSTEM, campaign_id=campaign.pk, organization_id=org.pk, actor="u").ok
    drain_queue(max_tasks=100)
    campaign.refresh_from_db()
    assert campaign.status == "pending_review"
    return campaign


def _attention(client) -> dict[str, object]:
    response = client.get(reverse("admin:index"))
    assert response.status_code == 200
    return {item.title: item for item in response.context["dashboard"]["attention"]}


def test_members_see_their_held_campaigns_linked_to_the_campaign(client, django_user_model, org, held):
    from owlat.organizations import organization_create

    other = organization_create(name="Other")
    login(client, django_user_model, other, username="stranger")
    assert not any("held for review" in t for t in _attention(client))

    login(client, django_user_model, org, role="editor")
    item = _attention(client)[f"Campaign “{held.name}” is held for review"]
    assert item.link == reverse("admin:campaigns_campaign_change", args=[held.pk])
    assert "held for review" in item.detail


def test_platform_staff_see_every_held_campaign_linked_to_the_review_queue(
    client, django_user_model, org, held
):
    from campaigns.dashboard import held_for_review

    items = list(held_for_review(None))
    assert [i.link for i in items] == [reverse("admin:campaigns_campaignreview_change", args=[held.pk])]
    login(client, django_user_model, org, username="staff", superuser=True)
    titles = _attention(client)
    assert f"Campaign “{held.name}” is held for review" in titles


def test_more_than_five_held_campaigns_end_with_a_count(org, held, monkeypatch):
    from campaigns import dashboard

    monkeypatch.setattr(dashboard, "SHOWN", 0)
    items = list(dashboard.held_for_review(org.pk))
    assert [i.title for i in items] == ["1 more campaign(s) held for review"]
    assert items[0].link.endswith("?status__exact=pending_review")


def test_a_send_job_without_progress_is_listed_as_stuck(
    client, django_user_model, org, make_campaign, topic, make_contact
):
    make_contact(topic=topic)
    campaign = make_campaign()
    assert campaign_send_now(authority=SYSTEM, campaign_id=campaign.pk, organization_id=org.pk, actor="u").ok
    drain_queue(queue="default", max_tasks=1)  # the job exists, its first page not yet walked
    login(client, django_user_model, org)
    title = f"Sending of campaign “{campaign.name}” looks stuck"
    assert title not in _attention(client)  # fresh: not stuck

    CampaignSendJob.objects.filter(campaign=campaign).update(
        updated_at=timezone.now() - dt.timedelta(minutes=11)
    )
    item = _attention(client)[title]
    assert item.severity == "danger"
    assert item.link == reverse("admin:campaigns_campaign_change", args=[campaign.pk])
