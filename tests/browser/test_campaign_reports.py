"""Campaign report and follow-ups in a real browser: the per-link report after clicks (with the chart, bounces
and the CSV link), "Resend to non-openers" creating a draft, and the segment editor's campaign pickers. Tasks
run in the test process (`drain_queue`, the `local` provider); screenshots under var/screenshots/."""

from __future__ import annotations

import pytest

from tests.browser.conftest import login, screenshot

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def sent_campaign(operator, settings):
    from campaigns.services import campaign_create, campaign_send_now
    from delivery.bounces.records import bounce_record
    from delivery.lifecycle import SendRef, send_transition
    from delivery.models import EmailSend
    from owlat.models import Contact, ContactTopic, Topic
    from owlat.permissions import Authority
    from templates.models import EmailTemplate
    from testsupport.queue import drain_queue

    settings.SITE_URL = "http://127.0.0.1:8000"
    org = operator["org"]
    topic = Topic.objects.create(organization=org, name="Newsletter", require_double_opt_in=False)
    for i in range(5):
        contact = Contact.objects.create(organization=org, email=f"reader{i}@example.com", first_name=f"R{i}")
        ContactTopic.objects.create(organization=org, contact=contact, topic=topic)
    template = EmailTemplate.objects.create(
        organization=org,
        name="April letter",
        subject="April news",
        html_content='<p>Hello {{firstName}}</p><p><a href="https://example.org/april">Read</a> '
        '<a href="https://example.org/shop">Shop</a></p>',
    )
    system = Authority.system("test")
    campaign = campaign_create(
        organization_id=org.pk,
        actor="test",
        authority=system,
        fields={
            "name": "April newsletter",
            "email_template_id": template.pk,
            "from_email": "hello@acme.test",
            "from_name": "Acme",
            "audience": {"kind": "topic", "topicId": str(topic.pk)},
        },
    )
    assert campaign_send_now(authority=system, campaign_id=campaign.pk, organization_id=org.pk, actor="t").ok
    drain_queue(max_tasks=1000)
    campaign.refresh_from_db()
    assert campaign.status == "sent"
    rows = list(EmailSend.objects.filter(campaign_id=campaign.pk).order_by("contact_email"))
    # readers 0 and 1 open; 0 clicks "april" twice and "shop" once, 1 clicks "april"; reader 4 bounces
    for row in rows[:2]:
        assert send_transition(SendRef("campaign", str(row.pk)), "opened", {"at": row.sent_at}).ok
    for row, url in ((rows[0], "april"), (rows[0], "april"), (rows[0], "shop"), (rows[1], "april")):
        ref = SendRef("campaign", str(row.pk))
        assert send_transition(ref, "clicked", {"at": row.sent_at, "url": f"https://example.org/{url}"}).ok
    assert send_transition(
        SendRef("campaign", str(rows[4].pk)), "bounced", {"at": rows[4].sent_at, "bounce_type": "hard"}
    ).ok
    bounce_record(
        organization_id=org.pk,
        send_kind="campaign",
        send_id=rows[4].pk,
        contact_id=rows[4].contact_id,
        email=rows[4].contact_email,
        kind="hard",
        reason="user_unknown",
        status="5.1.1",
        diagnostic="550 5.1.1 user unknown",
    )
    return campaign


def test_per_link_report_and_resend_to_non_openers(page, live_server, operator, sent_campaign):
    from campaigns.models import Campaign

    login(page, live_server)
    page.goto(f"{live_server.url}/admin/campaigns/campaign/{sent_campaign.pk}/change/")
    page.click("#full-report")
    page.wait_for_load_state()
    links = page.locator("#report-links").inner_text()
    assert "https://example.org/april\t2\t3" in links and "https://example.org/shop\t1\t1" in links
    rates = page.locator("#report-rates").inner_text()
    assert "Clicked\t2\t2 of" in rates and "Bounced\t1\t1 of 5 sent (20.00 %)" in rates
    assert "user unknown" in page.locator("#report-bounces").inner_text()
    assert page.locator("svg.campaign-activity rect[data-series]").count() == 3  # one hour, three bars
    screenshot(page, "campaign-report-links")

    page.click("text=Resend to non-openers…")
    page.wait_for_load_state()
    # readers 2, 3 and 4 did not open; reader 4's hard bounce suppressed the address
    assert "3 recipients who received" in page.inner_text("#non-openers-count")
    assert "2 of them can be mailed now" in page.inner_text("#non-openers-count")
    screenshot(page, "campaign-resend-non-openers")
    page.fill("#id_subject", "In case you missed it")
    page.click("button:has-text('Create the draft')")
    page.wait_for_load_state()
    draft = Campaign.objects.get(name="April newsletter (to non-openers)")
    assert draft.status == "draft" and draft.subject == "In case you missed it"
    assert f"/campaign/{draft.pk}/change/" in page.url
    assert page.inner_text("#eligible-count") == "2"  # reader 4's hard bounce suppressed the address
    screenshot(page, "campaign-non-openers-draft")

    segment_id = draft.audience["segmentId"]
    page.goto(f"{live_server.url}/admin/owlat/segment/{segment_id}/change/")
    body = page.inner_text("body")
    assert "April newsletter" in body
    screenshot(page, "segment-campaign-conditions")


def test_explain_why_a_suppressed_contact_gets_no_campaign(page, live_server, operator, sent_campaign):
    from campaigns.services import campaign_duplicate
    from owlat.permissions import Authority

    # Given a copy of the sent campaign (a draft to the same topic); reader 4's hard bounce suppressed the address
    draft = campaign_duplicate(campaign=sent_campaign, actor="test", authority=Authority.system("test"))
    login(page, live_server)
    page.goto(f"{live_server.url}/admin/campaigns/campaign/{draft.pk}/change/")
    page.click("#explain-audience")
    page.wait_for_load_state()
    table = page.locator("#audience-breakdown").inner_text()
    assert "Would receive it\t4" in table
    assert "Excluded: suppressed (bounced, complained or blocked)\t1" in table
    page.fill("#id_email", "reader4@example.com")
    page.click("button:has-text('Explain')")
    page.wait_for_load_state()
    assert "Excluded — suppressed" in page.inner_text("#explain-result")
    screenshot(page, "campaign-explain-audience")
