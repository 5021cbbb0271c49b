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
    r = client.post(
        reverse("admin:campaigns_campaign_transition", args=[campaign.pk, "cancel"]),
        {"post": "yes"},
        follow=True,
    )
    assert b"Only scheduled, sending or paused campaigns can be cancelled" in r.content
    r = client.post(
        reverse("admin:campaigns_campaign_transition", args=[campaign.pk, "send"]),
        {"post": "yes"},
        follow=True,
    )
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
    # the list and the page show each rule that hit with the offending text
    assert b"<mark>https://bit.ly/x</mark>" in listing.content
    detail = client.get(reverse("admin:campaigns_campaignreview_change", args=[held.pk]))
    assert b"url_shorteners" in detail.content and b"Approve and send" in detail.content
    assert b"Go \xe2\x86\x92 <mark>https://bit.ly/x</mark>" in detail.content
    assert b"<mark>HELLO THERE!!!</mark>" in detail.content
    page = client.get(reverse("admin:campaigns_campaign_change", args=[held.pk]))
    assert b'id="review-panel"' in page.content and b"<mark>https://bit.ly/x</mark>" in page.content
    reject_url = reverse("admin:campaigns_campaignreview_decide", args=[held.pk, "reject"])
    assert client.post(reject_url, {"reason": ""}).status_code == 200
    r = client.post(reject_url, {"reason": "Shortened links"})
    assert r.status_code == 302
    held.refresh_from_db()
    assert held.status == "draft" and held.content_block_reason == "Rejected in review: Shortened links"
    # a second decision on a campaign no longer held changes nothing
    r = client.post(
        reverse("admin:campaigns_campaignreview_decide", args=[held.pk, "approve"]),
        {"post": "yes"},
        follow=True,
    )
    assert b"not pending review" in r.content


def test_the_eligible_count_is_live_while_picking_the_audience(
    client, django_user_model, org, topic, make_contact, make_campaign
):
    """Item 8: the editor asks for the count of the audience being picked, before it is saved; the count is of
    the active (or the campaign's) organization only."""
    from django.utils import timezone

    from owlat.models import Topic
    from testsupport.world import sending_organization

    login(client, django_user_model, org)
    make_contact(topic=topic)
    make_contact(topic=topic)
    make_contact(topic=topic, unsubscribed_at=timezone.now())  # not eligible
    add = client.get(reverse("admin:campaigns_campaign_add"))
    url = reverse("admin:campaigns_campaign_eligible_count")
    assert f'"eligibleCount": "{url}"'.encode() in add.content and b"refreshCount" in add.content
    assert b'id="eligible-count"' in add.content and b'id="campaign-preview"' in add.content
    assert client.get(url, {"kind": "topic", "topic": str(topic.pk)}).json() == {"count": 2}
    assert client.get(url, {"kind": ""}).json() == {"count": 0}
    bad = client.get(url, {"kind": "topic", "topic": "nope"})
    assert bad.status_code == 400 and bad.json()["field"] == "audience.topicId"
    other = sending_organization("Other", "other.test")
    theirs = Topic.objects.create(organization=other, name="Theirs")
    assert client.get(url, {"kind": "topic", "topic": str(theirs.pk)}).status_code == 400
    from campaigns.services import campaign_create

    their_campaign = campaign_create(
        organization_id=other.pk, actor="x", fields={"name": "Theirs"}, authority=SYSTEM
    )
    r = client.get(url, {"campaign": str(their_campaign.pk), "kind": "topic", "topic": str(theirs.pk)})
    assert r.status_code == 404
    mine = make_campaign()
    r = client.get(url, {"campaign": str(mine.pk), "kind": "topic", "topic": str(topic.pk)})
    assert r.json() == {"count": 2}


def test_choose_winner_buttons_only_for_a_manual_test_while_testing(
    client, django_user_model, org, make_campaign, topic, make_contact
):
    """CMP-17: the report's "choose winner" buttons are shown only for manual tests; declaring one sends the
    winner to the remainder."""
    from campaigns.abtest import ab_enable
    from campaigns.services import campaign_send_now
    from testsupport.queue import drain_queue

    login(client, django_user_model, org)
    for _ in range(10):
        make_contact(topic=topic)
    owner = Authority.member("owner")
    cfg = {"testType": "subject", "variantBSubject": "B", "splitPercentage": 50}
    manual = make_campaign()
    timed = make_campaign()
    assert ab_enable(
        campaign=manual, config={**cfg, "winnerCriteria": "manual"}, actor="u", authority=owner
    ).ok
    assert ab_enable(
        campaign=timed,
        config={**cfg, "winnerCriteria": "open_rate", "testDuration": 4},
        actor="u",
        authority=owner,
    ).ok
    for c in (manual, timed):
        assert campaign_send_now(authority=SYSTEM, campaign_id=c.pk, organization_id=org.pk, actor="u").ok
    drain_queue(max_tasks=1000)
    for c in (manual, timed):
        c.refresh_from_db()
        assert c.ab_test_status == "testing"
    page = client.get(reverse("admin:campaigns_campaign_change", args=[manual.pk]))
    assert b"Declare A the winner" in page.content and b"Declare B the winner" in page.content
    page = client.get(reverse("admin:campaigns_campaign_change", args=[timed.pk]))
    assert b"Declare A the winner" not in page.content and b"Declare B the winner" not in page.content
    r = client.post(reverse("admin:campaigns_campaign_transition", args=[manual.pk, "winner-B"]), follow=True)
    assert b"Done: winner-B." in r.content
    drain_queue(max_tasks=1000)
    manual.refresh_from_db()
    assert manual.ab_winner == "B" and manual.status == "sent"


def test_the_report_shows_every_outcome_with_its_rate_per_variant_and_over_time(
    client, django_user_model, org, make_campaign, topic, make_contact
):
    """Item 8's report page: delivered / opened / clicked / bounced / complained / unsubscribed with their
    rates, the A/B results per variant and the activity chart."""
    from django.utils import timezone

    from campaigns.abtest import ab_enable
    from campaigns.services import campaign_send_now
    from delivery.lifecycle import SendRef, send_transition
    from delivery.models import EmailSend
    from testsupport.queue import drain_queue

    login(client, django_user_model, org)
    for _ in range(8):
        make_contact(topic=topic)
    campaign = make_campaign()
    cfg = {"testType": "subject", "variantBSubject": "B", "splitPercentage": 50, "winnerCriteria": "manual"}
    assert ab_enable(campaign=campaign, config=cfg, actor="u", authority=Authority.member("owner")).ok
    assert campaign_send_now(authority=SYSTEM, campaign_id=campaign.pk, organization_id=org.pk, actor="u").ok
    drain_queue(max_tasks=1000)
    sends = list(EmailSend.objects.filter(campaign_id=campaign.pk).order_by("contact_email"))
    assert len(sends) == 8 and {s.status for s in sends} == {"sent"}
    now = timezone.now()
    events = [  # (row, event, payload): 6 delivered, 4 opened, 2 clicked, 1 bounced, 1 complained
        *[(s, "delivered", {}) for s in sends[:6]],
        *[(s, "opened", {}) for s in sends[:4]],
        *[(s, "clicked", {"url": "https://example.org/post"}) for s in sends[:2]],
        (sends[6], "bounced", {"bounce_type": "hard"}),
        (sends[5], "complained", {}),
    ]
    for send, event, payload in events:
        assert send_transition(SendRef("campaign", str(send.pk)), event, {"at": now, **payload}).ok, event
    page = client.get(reverse("admin:campaigns_campaign_change", args=[campaign.pk]))
    html = page.content.decode()
    for label, count, rate in [
        ("Sent", 8, ""),
        ("Delivered", 6, "6 of 8 sent (75.00 %)"),
        ("Opened", 4, "4 of 6 delivered (opens reported by the provider) (66.67 %)"),  # no row had our pixel
        ("Clicked", 2, "2 of 6 delivered (33.33 %)"),
        ("Bounced", 1, "1 of 8 sent (12.50 %)"),
        ("Complained", 1, "1 of 8 sent (12.50 %)"),
        ("Unsubscribed", 0, "0 of 8 sent (0.00 %)"),
    ]:
        assert f"<tr><th>{label}</th><td>{count}</td><td>{rate}</td></tr>" in html, label
    assert "<tr><th>Outcome unknown</th><td>0</td><td></td></tr>" in html
    assert "Not applicable: the campaign is sending." in html  # pre-flight is for drafts and scheduled ones
    assert "see Progress (counted when the send started)" in html  # no audience walk on every 5 s reload
    variants = {s.ab_variant for s in sends}
    assert variants == {"A", "B"}
    assert "Status: testing · winner: —" in html and "<th>A</th>" in html and "<th>B</th>" in html
    assert "over time" in html.lower() and 'data-series="opened"' in html
    assert "opened: 4</title>" in html and "clicked: 2</title>" in html and "sent: 8</title>" in html


def test_the_five_second_reload_of_a_sending_campaign_runs_no_row_aggregation(
    client, django_user_model, org, make_campaign, topic, make_contact
):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from campaigns.services import campaign_send_now
    from testsupport.queue import drain_queue

    login(client, django_user_model, org)
    for _ in range(3):
        make_contact(topic=topic)
    campaign = make_campaign()
    assert campaign_send_now(authority=SYSTEM, campaign_id=campaign.pk, organization_id=org.pk, actor="u").ok
    drain_queue(queue="default", max_tasks=1)  # the orchestrator: scan, snapshot, first page queued
    campaign.refresh_from_db()
    assert campaign.status == "sending"
    url = reverse("admin:campaigns_campaign_change", args=[campaign.pk])

    def row_aggregations() -> list[str]:
        with CaptureQueriesContext(connection) as queries:
            assert client.get(url).status_code == 200
        sends = [q["sql"] for q in queries.captured_queries if "delivery_emailsend" in q["sql"]]
        return [sql for sql in sends if "COUNT(" in sql.upper()]

    first = row_aggregations()
    assert first  # the first view computes the buckets and the hourly chart
    assert row_aggregations() == []  # the reload 5 s later reads them from the cache


def test_the_chosen_sender_is_shown_again_after_save(client, django_user_model, org, make_campaign):
    login(client, django_user_model, org)
    campaign = make_campaign(from_email="news@acme.test")
    page = client.get(reverse("admin:campaigns_campaign_change", args=[campaign.pk]))
    form = page.context_data["adminform"].form
    assert form.initial["sender"] == "news@acme.test"
    assert "default sender" in form.fields["sender"].help_text
    other = make_campaign(from_email=None)
    form = (
        client.get(reverse("admin:campaigns_campaign_change", args=[other.pk])).context_data["adminform"].form
    )
    assert form.initial["sender"] == ""
    assert (
        b"Ready to send." in client.get(reverse("admin:campaigns_campaign_change", args=[other.pk])).content
    )


def _set_zone(org, zone):
    from owlat.models import OrganizationSettings

    OrganizationSettings.objects.filter(organization=org).update(timezone=zone)


def test_schedule_reads_and_shows_the_time_on_the_organizations_clock(
    client, django_user_model, org, make_campaign
):
    import datetime as dt

    _set_zone(org, "Europe/Berlin")
    login(client, django_user_model, org)
    campaign = make_campaign()
    url = reverse("admin:campaigns_campaign_schedule", args=[campaign.pk])
    page = client.get(url)
    assert b"Send at (Europe/Berlin)" in page.content and b'type="datetime-local"' in page.content
    # the browser picker's value is wall-clock time in the organization's zone: 09:00 Berlin = 08:00 UTC
    r = client.post(url, {"scheduled_at": "2099-01-15T09:00"})
    assert r.status_code == 302, r.content[:2000]
    campaign.refresh_from_db()
    assert campaign.scheduled_at == dt.datetime(2099, 1, 15, 8, 0, tzinfo=dt.UTC)
    # shown back in that zone, and a changed zone is honoured
    shown = client.get(url).content.decode()
    assert 'value="2099-01-15T09:00"' in shown, shown[
        shown.find("datetime-local") - 200 : shown.find("datetime-local") + 300
    ]
    r = client.post(url, {"scheduled_at": "2099-01-15 09:00", "time_zone": "America/New_York"})
    campaign.refresh_from_db()
    assert campaign.scheduled_at == dt.datetime(2099, 1, 15, 14, 0, tzinfo=dt.UTC)
    # an ISO value with an offset keeps it; a bad value gets one clear error
    client.post(url, {"scheduled_at": "2099-01-15T09:00+00:00"})
    campaign.refresh_from_db()
    assert campaign.scheduled_at == dt.datetime(2099, 1, 15, 9, 0, tzinfo=dt.UTC)
    r = client.post(url, {"scheduled_at": "tomorrow"})
    assert r.content.count(b"Enter a date and time, e.g. 2026-12-04 09:00.") == 1


def test_irreversible_buttons_confirm_first_and_get_never_acts(
    client, django_user_model, org, make_campaign, topic, make_contact
):
    login(client, django_user_model, org)
    make_contact(topic=topic)
    make_contact(topic=topic)
    campaign = make_campaign()
    change = client.get(reverse("admin:campaigns_campaign_change", args=[campaign.pk])).content.decode()
    send_url = reverse("admin:campaigns_campaign_transition", args=[campaign.pk, "send"])
    assert f'href="{send_url}"' in change  # a link to the confirmation, not a form that acts
    page = client.get(send_url)
    assert page.status_code == 200
    body = page.content.decode()
    assert "Send this campaign now?" in body and "goes to the 2 eligible recipients" in body
    assert "Send to 2 recipients" in body and "Back, change nothing" in body and "csrfmiddlewaretoken" in body
    campaign.refresh_from_db()
    assert campaign.status == "draft"
    # a POST that did not come from the page shows it too
    assert b"Send this campaign now?" in client.post(send_url).content
    campaign.refresh_from_db()
    assert campaign.status == "draft"
    client.post(send_url, {"post": "yes"})
    campaign.refresh_from_db()
    assert campaign.status == "sending"


def test_cancel_of_a_scheduled_campaign_names_when_it_would_have_gone(
    client, django_user_model, org, make_campaign
):
    import datetime as dt

    from campaigns.services import campaign_schedule

    _set_zone(org, "Europe/Berlin")
    login(client, django_user_model, org)
    campaign = make_campaign()
    at = dt.datetime(2099, 3, 1, 8, 0, tzinfo=dt.UTC)
    assert campaign_schedule(
        campaign_id=campaign.pk, organization_id=org.pk, actor="u", authority=SYSTEM, scheduled_at=at
    ).ok
    page = client.get(reverse("admin:campaigns_campaign_transition", args=[campaign.pk, "cancel"]))
    assert b"It will not be sent at 2099-03-01 09:00 (Europe/Berlin)" in page.content
    assert b"cannot be undone" in page.content


def test_a_test_send_from_the_admin_goes_to_the_operator_by_default(
    client, django_user_model, org, make_campaign
):
    from delivery.models import EmailSend, TransactionalSend

    user = login(client, django_user_model, org)
    user.email = "ann@acme.test"
    user.save()
    campaign = make_campaign(subject="Hello")
    url = reverse("admin:campaigns_campaign_test_send", args=[campaign.pk])
    page = client.get(url)
    assert page.status_code == 200 and b'value="ann@acme.test"' in page.content
    assert b"Acme News &lt;news@acme.test&gt;" in page.content
    r = client.post(url, {"to": ", ".join(f"p{i}@example.com" for i in range(6))})
    assert r.status_code == 200 and b"At most 5 addresses" in r.content
    r = client.post(url, {"to": "ann@acme.test, qa@example.com"})
    assert r.status_code == 302
    assert sorted(TransactionalSend.objects.filter(kind="test").values_list("email", flat=True)) == [
        "ann@acme.test",
        "qa@example.com",
    ]
    assert not EmailSend.objects.filter(campaign_id=campaign.pk).exists()


def test_a_test_send_from_the_admin_is_sent_in_the_chosen_language(
    client, django_user_model, org, make_campaign
):
    from delivery.models import LocalMessage, TransactionalSend
    from testsupport.queue import drain_queue

    login(client, django_user_model, org)
    campaign = make_campaign()
    url = reverse("admin:campaigns_campaign_test_send", args=[campaign.pk])
    page = client.get(url).content.decode()
    assert 'name="language"' in page and '<option value="de">de</option>' in page and "en (default)" in page
    r = client.post(url, {"to": "qa@example.com", "language": "fr"})
    assert r.status_code == 200 and "Select a valid choice" in r.content.decode()
    assert client.post(url, {"to": "qa@example.com", "language": "de"}).status_code == 302
    send = TransactionalSend.objects.get(kind="test")
    assert send.language == "de"
    drain_queue(max_tasks=20)
    mail = LocalMessage.objects.get(to="qa@example.com")
    assert "Hallo" in mail.html and "Neues für" in mail.subject


def test_approve_in_review_confirms_first(
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
    # the organization's owner reads why it waits and what happens next
    login(client, django_user_model, org)
    owner_page = client.get(reverse("admin:campaigns_campaign_change", args=[held.pk])).content.decode()
    assert "The content scan held this campaign before any mail went out" in owner_page
    assert (
        "url_shorteners" in owner_page and "score" in owner_page and "Platform staff review it" in owner_page
    )
    login(client, django_user_model, org, username="staff", superuser=True)
    approve = reverse("admin:campaigns_campaignreview_decide", args=[held.pk, "approve"])
    page = client.get(approve).content.decode()
    assert "Approve and send?" in page and "1 recipients" in page
    changelist = reverse("admin:campaigns_campaignreview_changelist")
    bulk = client.post(changelist, {"action": "approve_selected", "_selected_action": [str(held.pk)]})
    assert bulk.status_code == 200 and "Approve and send to 1 recipients" in bulk.content.decode()
    held.refresh_from_db()
    assert held.status == "pending_review"  # neither the page nor the action's first step acted
    client.post(changelist, {"action": "approve_selected", "_selected_action": [str(held.pk)], "post": "yes"})
    held.refresh_from_db()
    assert held.status == "sending"


def test_local_time_sending_names_the_first_and_last_instants(
    client, django_user_model, org, make_campaign, topic, make_contact
):
    import datetime as dt

    from campaigns.services import campaign_schedule

    _set_zone(org, "Europe/Berlin")
    make_contact(topic=topic, timezone="Asia/Tokyo")
    make_contact(topic=topic, timezone="America/New_York")
    make_contact(topic=topic)  # no zone: the organization's
    login(client, django_user_model, org)
    campaign = make_campaign()
    at = dt.datetime(2099, 2, 28, 23, 0, tzinfo=dt.UTC)  # 08:00 in Tokyo, 18:00 the day before in New York
    assert campaign_schedule(
        campaign_id=campaign.pk,
        organization_id=org.pk,
        actor="u",
        authority=SYSTEM,
        scheduled_at=at,
        use_recipient_timezone=True,
        scheduled_hour=9,
        scheduled_minute=0,
    ).ok
    page = client.get(reverse("admin:campaigns_campaign_schedule", args=[campaign.pk])).content.decode()
    # 09:00 Tokyo = 01:00 Berlin on 1 March; 09:00 New York = 15:00 Berlin
    assert (
        "3 time zones get it from 2099-03-01 01:00 (Europe/Berlin) (first: Asia/Tokyo) to "
        "2099-03-01 15:00 (Europe/Berlin) (last: America/New_York)"
    ) in page, page[page.find("Now scheduled") : page.find("Now scheduled") + 400]
