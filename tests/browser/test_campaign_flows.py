"""Campaign screens in a real browser (issue 9 item 8): the editor's pickers with the live eligible-recipient
count and the template preview, the pre-flight panel, Send now, the report of the sent campaign, and the review
queue where platform staff reject a held campaign. Tasks run in the test process (`drain_queue`, the `local`
provider); each screen ends with a screenshot under var/screenshots/."""

from __future__ import annotations

import pytest

from tests.browser.conftest import PASSWORD, login, screenshot

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def audience(operator, settings):
    from django.utils import timezone

    from owlat.models import Contact, ContactTopic, Topic
    from templates.models import EmailTemplate

    settings.SITE_URL = "http://127.0.0.1:8000"
    org = operator["org"]
    topic = Topic.objects.create(organization=org, name="Newsletter", require_double_opt_in=False)
    for i, unsubscribed in enumerate([None, None, None, timezone.now()]):
        contact = Contact.objects.create(
            organization=org,
            email=f"reader{i}@example.com",
            first_name=f"Reader{i}",
            unsubscribed_at=unsubscribed,
        )
        ContactTopic.objects.create(organization=org, contact=contact, topic=topic)
    template = EmailTemplate.objects.create(
        organization=org,
        name="April letter",
        subject="April news for {{firstName|'you'}}",
        html_content='<p>Hello {{firstName}}</p><p><a href="https://example.org/april">Read</a></p>',
    )
    return {"topic": topic, "template": template}


def test_compose_check_send_and_read_the_report(page, live_server, operator, audience):
    from campaigns.models import Campaign
    from delivery.lifecycle import SendRef, send_transition
    from delivery.models import EmailSend
    from testsupport.queue import drain_queue

    login(page, live_server)
    page.goto(f"{live_server.url}/admin/campaigns/campaign/add/")
    page.fill("#id_name", "April newsletter")
    page.select_option("#id_email_template", str(audience["template"].pk))
    assert (
        page.locator("#template-preview-link")
        .get_attribute("href")
        .endswith(f"/{audience['template'].pk}/preview/")
    )
    page.select_option("#id_sender", "hello@acme.test")
    page.select_option("#id_audience_kind", "topic")
    assert page.inner_text("#eligible-count") == "choose the topic"
    page.select_option("#id_audience_topic", str(audience["topic"].pk))
    page.wait_for_function("document.getElementById('eligible-count').textContent === '3'")
    screenshot(page, "campaign-editor")

    page.click("[name=_continue]")
    page.wait_for_load_state()
    campaign = Campaign.objects.get(name="April newsletter")
    assert campaign.status == "draft" and campaign.from_email == "hello@acme.test"
    body = page.inner_text("body")
    assert "Ready to send." in body and "3" in page.inner_text("#eligible-count")
    screenshot(page, "campaign-preflight")

    page.click("a:has-text('Send now…')")
    page.wait_for_load_state()
    assert "goes to the 3 eligible recipients" in page.inner_text("#confirm-consequences")
    page.click("#confirm-action button[name=confirm]")
    page.wait_for_load_state()
    campaign.refresh_from_db()
    assert campaign.status == "sending"
    drain_queue(max_tasks=1000)
    campaign.refresh_from_db()
    assert campaign.status == "sent"
    for row in EmailSend.objects.filter(campaign_id=campaign.pk).order_by("contact_email")[:2]:
        assert send_transition(SendRef("campaign", str(row.pk)), "opened", {"at": row.sent_at}).ok
    page.goto(f"{live_server.url}/admin/campaigns/campaign/{campaign.pk}/change/")
    report = page.locator("table.campaign-report").inner_text()
    assert "Sent\t3" in report and "Delivered\t2\t2 of 3 sent (66.67 %)" in report and "Opened\t2" in report
    assert "Outcome unknown\t0" in report
    body = page.inner_text("body")
    assert "No activity yet." not in body and "Not applicable: the campaign is sent." in body
    screenshot(page, "campaign-report")


def test_platform_staff_reject_a_held_campaign_in_the_review_queue(
    page, live_server, operator, audience, django_user_model
):
    from campaigns.models import Campaign
    from campaigns.services import campaign_create, campaign_send_now
    from owlat.permissions import Authority
    from testsupport.queue import drain_queue

    template = audience["template"]
    template.subject = "FREE OFFER!!!"
    template.html_content = '<p>Hi</p><p><a href="https://bit.ly/xyz">Claim</a></p>'
    template.save()
    org, system = operator["org"], Authority.system("test")
    held = campaign_create(
        organization_id=org.pk,
        actor="u",
        authority=system,
        fields={
            "name": "Suspicious",
            "email_template_id": template.pk,
            "from_email": "hello@acme.test",
            "audience": {"kind": "topic", "topicId": str(audience["topic"].pk)},
        },
    )
    assert campaign_send_now(authority=system, campaign_id=held.pk, organization_id=org.pk, actor="u").ok
    drain_queue(max_tasks=100)
    held.refresh_from_db()
    assert held.status == "pending_review"

    django_user_model.objects.create_superuser(username="staff", password=PASSWORD)
    login(page, live_server, username="staff")
    page.goto(f"{live_server.url}/admin/campaigns/campaignreview/")
    assert "Suspicious" in page.inner_text("body")
    page.goto(f"{live_server.url}/admin/campaigns/campaignreview/{held.pk}/change/")
    body = page.inner_text("body")
    assert "url_shorteners" in body and "Approve and send" in body
    screenshot(page, "campaign-review-queue")
    page.click("a:has-text('Reject…')")
    page.wait_for_load_state()
    page.fill("#id_reason", "Shortened links hide where they go")
    page.locator("form:has(#id_reason) button[type=submit]").click()
    page.wait_for_load_state()
    assert page.url.endswith("/admin/campaigns/campaignreview/")
    held = Campaign.objects.get(pk=held.pk)
    assert held.status == "draft"
    assert held.content_block_reason == "Rejected in review: Shortened links hide where they go"
