"""Explain a campaign's audience: the count per exclusion rule over the audience (the rules the send walk
applies) and, for one contact, the rule that excludes them; read-only, tenant-scoped in the admin."""

from __future__ import annotations

from django.urls import reverse
from django.utils import timezone

from campaigns.explain import audience_breakdown, audience_explain
from delivery.models import EmailSend
from owlat.models import BlockedEmail, Contact

from .test_admin import login
from .test_orchestrator import audience_world, send_and_drain  # noqa: F401 - the fixture


def test_breakdown_counts_each_rule_and_matches_the_send(make_campaign, org, audience_world):  # noqa: F811
    campaign = make_campaign()
    breakdown = audience_breakdown(campaign)
    assert breakdown.eligible == 3 and breakdown.candidates == 8 and not breakdown.capped
    assert {r: n for r, _, n in breakdown.excluded} == {
        "deleted": 1,
        "no_email": 1,
        "suppressed": 1,
        "unsubscribed": 1,
        "membership_pending": 1,
    }
    send_and_drain(campaign, org)
    assert EmailSend.objects.filter(campaign_id=campaign.pk).count() == breakdown.eligible
    assert EmailSend.objects.count() == 3  # the explanation wrote nothing


def test_one_contact_is_explained(make_campaign, org, topic, make_contact):
    campaign = make_campaign()
    ok = make_contact(topic=topic)
    outsider = make_contact()
    gone = make_contact(topic=topic, unsubscribed_at=timezone.now())
    blocked = make_contact(topic=topic)
    BlockedEmail.objects.create(organization=org, email=blocked.email, reason="bounced")
    assert audience_explain(campaign, ok).reason == "eligible"
    assert audience_explain(campaign, outsider).reason == "not_in_audience"
    assert audience_explain(campaign, gone).reason == "unsubscribed"
    assert (
        audience_explain(campaign, blocked).text == "Excluded — suppressed (bounced, complained or blocked)."
    )
    send_and_drain(campaign, org)
    assert audience_explain(campaign, ok).reason == "already_sent"


def test_audience_page_in_the_admin(client, django_user_model, org, topic, make_campaign, make_contact):
    campaign = make_campaign()
    blocked = make_contact(topic=topic)
    BlockedEmail.objects.create(organization=org, email=blocked.email, reason="complained")
    make_contact(topic=topic)
    login(client, django_user_model, org)
    change = client.get(reverse("admin:campaigns_campaign_change", args=[campaign.pk])).content.decode()
    url = reverse("admin:campaigns_campaign_audience", args=[campaign.pk])
    assert url in change
    page = client.get(url).content.decode()
    assert 'data-reason="suppressed"' in page and "Would receive it" in page
    page = client.get(url, {"email": blocked.email.upper()}).content.decode()
    assert 'data-reason="suppressed"' in page and "Excluded — suppressed" in page
    page = client.get(url, {"email": "nobody@example.com"}).content.decode()
    assert "No contact with the address nobody@example.com" in page
    assert Contact.objects.filter(email="nobody@example.com").count() == 0


def test_inbox_correspondents_are_no_segment_audience(make_campaign, org, topic, make_contact):
    from owlat.models import Segment

    everyone = Segment.objects.create(
        organization=org, name="Everyone", filters={"logic": "AND", "conditions": []}
    )
    campaign = make_campaign(audience={"kind": "segment", "segmentId": str(everyone.pk)})
    reader = make_contact()
    stranger = make_contact(source="inbound")  # wrote to the inbox, never subscribed
    joined = make_contact(source="inbound", topic=topic)  # wrote in, then joined a topic
    breakdown = audience_breakdown(campaign)
    assert breakdown.eligible == 2
    assert {r: n for r, _, n in breakdown.excluded} == {"correspondent": 1}
    assert audience_explain(campaign, stranger).reason == "correspondent"
    assert audience_explain(campaign, joined).reason == "eligible"
    assert audience_explain(campaign, reader).reason == "eligible"
    send_and_drain(campaign, org)
    assert set(EmailSend.objects.filter(campaign_id=campaign.pk).values_list("contact_id", flat=True)) == {
        reader.pk,
        joined.pk,
    }
