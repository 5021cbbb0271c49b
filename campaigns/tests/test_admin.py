"""The campaign back-office: the editor (pickers, no JSON), panels, lifecycle buttons with refusal messages,
the schedule form and the platform-staff review queue."""

from __future__ import annotations

from django.urls import reverse

from campaigns.models import Campaign
from owlat.models import Membership
from owlat.permissions import Authority

SYSTEM = Authority.system("test")


def login(client, django_user_model, org, role="owner", username="ann", superuser=False):
    if superuser:
        user = django_user_model.objects.create_superuser(username=username, password="pw")
    else:
        user = django_user_model.objects.create_user(username=username, password="pw", is_staff=True)
        Membership.objects.create(user=user, organization=org, role=role)
    client.force_login(user)
    return user


def test_editor_creates_a_campaign_from_pickers(client, django_user_model, org, template, topic):
    login(client, django_user_model, org)
    page = client.get(reverse("admin:campaigns_campaign_add"))
    assert page.status_code == 200
    assert b"audience_kind" in page.content and b"ab_split_percentage" in page.content
    data = {
        "name": "April",
        "email_template": str(template.pk),
        "subject": "",
        "sender": "news@acme.test",
        "from_name": "Acme",
        "from_email": "",
        "reply_to": "",
        "audience_kind": "topic",
        "audience_topic": str(topic.pk),
        "archive_enabled": "unknown",
        "ab_enabled": "on",
        "ab_test_type": "subject",
        "ab_variant_b_subject": "",
        "ab_split_percentage": "20",
        "ab_winner_criteria": "manual",
    }
    r = client.post(reverse("admin:campaigns_campaign_add"), data)
    assert r.status_code == 200 and b"Variant B subject is required for subject tests" in r.content
    data["ab_variant_b_subject"] = "Other subject"
    r = client.post(reverse("admin:campaigns_campaign_add"), data)
    assert r.status_code == 302, r.content[:3000]
    campaign = Campaign.objects.get(name="April")
    assert campaign.audience == {"kind": "topic", "topicId": str(topic.pk)}
    assert campaign.from_email == "news@acme.test"
    assert campaign.ab_test_status == "pending" and campaign.ab_config()["variantBSubject"] == "Other subject"


def test_change_page_panels_and_buttons(client, django_user_model, org, make_campaign, topic, make_contact):
    login(client, django_user_model, org)
    make_contact(topic=topic)
    campaign = make_campaign()
    page = client.get(reverse("admin:campaigns_campaign_change", args=[campaign.pk]))
    assert page.status_code == 200
    content = page.content.lower()
    for text in (b"ready to send.", b"eligible recipients now", b"send now", b"schedule", b"not started"):
        assert text in content, text
    preview = client.get(reverse("admin:campaigns_campaign_preview", args=[campaign.pk]))
    assert b"Hello Jane" in preview.content
    # a refused transition shows the lifecycle's message
    r = client.post(reverse("admin:campaigns_campaign_transition", args=[campaign.pk, "cancel"]), follow=True)
    assert b"Only scheduled campaigns can be cancelled" in r.content
    r = client.post(reverse("admin:campaigns_campaign_transition", args=[campaign.pk, "send"]), follow=True)
    campaign.refresh_from_db()
    assert campaign.status == "sending"
    assert b"progress" in r.content.lower() and b"results" in r.content.lower()


def test_schedule_form(client, django_user_model, org, make_campaign):
    login(client, django_user_model, org)
    campaign = make_campaign()
    url = reverse("admin:campaigns_campaign_schedule", args=[campaign.pk])
    assert client.get(url).status_code == 200
    r = client.post(url, {"scheduled_at": "2020-01-01 10:00", "use_recipient_timezone": ""})
    assert r.status_code == 200 and b"Scheduled time must be in the future" in r.content
    r = client.post(
        url,
        {
            "scheduled_at": "2099-01-01 10:00",
            "use_recipient_timezone": "on",
            "scheduled_hour": "9",
            "scheduled_minute": "0",
        },
    )
    assert r.status_code == 302
    campaign.refresh_from_db()
    assert campaign.status == "scheduled" and campaign.use_recipient_timezone and campaign.scheduled_hour == 9


def test_review_queue_is_platform_staff_only(
    client, django_user_model, org, make_campaign, template, topic, make_contact
):
    from campaigns.services import campaign_send_now
    from testsupport.queue import drain_queue

    template.html_content = '<p>Hi</p><a href="https://bit.ly/x">Go</a>'
    template.subject = "HELLO THERE!!!"
    template.save()
    make_contact(topic=topic)
    held = make_campaign()
    campaign_send_now(authority=SYSTEM, campaign_id=held.pk, organization_id=org.pk, actor="u")
    drain_queue(max_tasks=100)
    held.refresh_from_db()
    assert held.status == "pending_review"
    login(client, django_user_model, org, username="member")
    assert client.get(reverse("admin:campaigns_campaignreview_changelist")).status_code == 403
    login(client, django_user_model, org, username="staff", superuser=True)
    listing = client.get(reverse("admin:campaigns_campaignreview_changelist"))
    assert listing.status_code == 200 and held.name.encode() in listing.content
    detail = client.get(reverse("admin:campaigns_campaignreview_change", args=[held.pk]))
    assert b"url_shorteners" in detail.content and b"Approve and send" in detail.content
    reject_url = reverse("admin:campaigns_campaignreview_decide", args=[held.pk, "reject"])
    assert client.post(reject_url, {"reason": ""}).status_code == 200
    r = client.post(reject_url, {"reason": "Shortened links"})
    assert r.status_code == 302
    held.refresh_from_db()
    assert held.status == "draft" and held.content_block_reason == "Rejected in review: Shortened links"
    # a second decision on a campaign no longer held changes nothing
    r = client.post(reverse("admin:campaigns_campaignreview_decide", args=[held.pk, "approve"]), follow=True)
    assert b"not pending review" in r.content
