"""A campaign as an operator runs it, in a real browser: test-send it to oneself, schedule it with the date-time
picker on the organization's clock, and the confirmation pages of Send now (Back changes nothing), Pause and
Cancel. Tasks run in the test process (`drain_queue`, the `local` provider); each screen is screenshotted under
var/screenshots/."""

from __future__ import annotations

import datetime as dt

import pytest

from tests.browser.conftest import login, screenshot

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def campaign(operator, settings):
    from campaigns.services import campaign_create
    from owlat.models import Contact, ContactTopic, OrganizationSettings, Topic
    from owlat.permissions import Authority
    from templates.models import EmailTemplate

    settings.SITE_URL = "http://127.0.0.1:8000"
    org = operator["org"]
    org.postal_address = "Acme Inc., 1 Main Street"
    org.save()
    OrganizationSettings.objects.filter(organization=org).update(timezone="Europe/Berlin")
    topic = Topic.objects.create(organization=org, name="Newsletter", require_double_opt_in=False)
    for i in range(3):
        contact = Contact.objects.create(organization=org, email=f"reader{i}@example.com", first_name=f"R{i}")
        ContactTopic.objects.create(organization=org, contact=contact, topic=topic)
    template = EmailTemplate.objects.create(
        organization=org, name="June", subject="June news", html_content="<p>Hello {{firstName}}</p>"
    )
    return campaign_create(
        organization_id=org.pk,
        actor="u",
        authority=Authority.system("test"),
        fields={
            "name": "June newsletter",
            "email_template_id": template.pk,
            "subject": "June news for {{firstName|'you'}}",
            "audience": {"kind": "topic", "topicId": str(topic.pk)},
        },
    )


def _confirm(page) -> None:
    page.click("#confirm-action button[name=confirm]")
    page.wait_for_load_state()


def test_test_send_schedule_confirm_send_pause_and_cancel(page, live_server, operator, campaign):
    from delivery.models import EmailSend, LocalMessage
    from testsupport.queue import drain_queue

    login(page, live_server)
    change = f"{live_server.url}/admin/campaigns/campaign/{campaign.pk}/change/"
    page.goto(change)
    assert "Ready to send." in page.inner_text("body")  # no sender named: the organization's default

    # test send: to the operator by default, marked as a test, from the default sender with its name
    page.click("a:has-text('Send test…')")
    page.wait_for_load_state()
    assert page.input_value("#id_to") == "olivia@acme.test"
    assert "From Acme <hello@acme.test>" in page.inner_text("#form-page")
    screenshot(page, "campaign-test-send")
    page.click("#form-page button[name=submit]")
    page.wait_for_load_state()
    assert "Test queued to olivia@acme.test." in page.inner_text("body")
    drain_queue(max_tasks=20)
    message = LocalMessage.objects.get(to="olivia@acme.test")
    assert message.subject == "[Test] June news for you"
    assert not EmailSend.objects.filter(campaign_id=campaign.pk).exists()

    # schedule with the picker, on the organization's clock
    page.click("a:has-text('Schedule…')")
    page.wait_for_load_state()
    assert "Send at (Europe/Berlin)" in page.inner_text("#form-page")
    page.fill("#id_scheduled_at", "2099-01-15T09:00")
    screenshot(page, "campaign-schedule")
    page.click("#form-page button[name=submit]")
    page.wait_for_load_state()
    assert "Campaign scheduled for 2099-01-15 09:00 (Europe/Berlin)." in page.inner_text("body")
    campaign.refresh_from_db()
    assert campaign.status == "scheduled"
    assert campaign.scheduled_at == dt.datetime(2099, 1, 15, 8, 0, tzinfo=dt.UTC)

    # Send now asks first; Back changes nothing
    page.click("a:has-text('Send now…')")
    page.wait_for_load_state()
    text = page.inner_text("#confirm-action")
    assert "sent now instead of at 2099-01-15 09:00 (Europe/Berlin)" in text
    assert "goes to the 3 eligible recipients" in text
    screenshot(page, "campaign-confirm-send")
    page.click("a:has-text('Back, change nothing')")
    page.wait_for_load_state()
    campaign.refresh_from_db()
    assert campaign.status == "scheduled" and page.url == change
    page.click("a:has-text('Send now…')")
    page.wait_for_load_state()
    _confirm(page)
    campaign.refresh_from_db()
    assert campaign.status == "sending"

    # Pause and Cancel, each after its page
    page.click("a:has-text('Pause…')")
    page.wait_for_load_state()
    assert "Resume continues where it stopped" in page.inner_text("#confirm-action")
    screenshot(page, "campaign-confirm-pause")
    _confirm(page)
    campaign.refresh_from_db()
    assert campaign.status == "paused"
    page.click("a:has-text('Cancel the send…')")
    page.wait_for_load_state()
    assert "cannot be undone" in page.inner_text("#confirm-action")
    screenshot(page, "campaign-confirm-cancel")
    _confirm(page)
    campaign.refresh_from_db()
    assert campaign.status == "cancelled"


def test_a_held_campaign_says_why_and_staff_approve_it_after_the_confirmation(
    page, live_server, operator, campaign, django_user_model
):
    from campaigns.services import campaign_send_now
    from owlat.permissions import Authority
    from tests.browser.conftest import PASSWORD
    from testsupport.queue import drain_queue

    template = campaign.email_template
    template.subject = "FREE OFFER!!!"
    template.html_content = '<p>Hi</p><p><a href="https://bit.ly/xyz">Claim</a></p>'
    template.save()
    type(campaign).objects.filter(pk=campaign.pk).update(subject=None)  # the template's subject goes out
    system = Authority.system("test")
    assert campaign_send_now(
        authority=system, campaign_id=campaign.pk, organization_id=operator["org"].pk, actor="u"
    ).ok
    drain_queue(max_tasks=100)
    campaign.refresh_from_db()
    assert campaign.status == "pending_review"

    # the owner reads why it waits and who decides
    login(page, live_server)
    page.goto(f"{live_server.url}/admin/campaigns/campaign/{campaign.pk}/change/")
    panel = page.inner_text("#review-panel")
    assert "url_shorteners" in panel and "Platform staff review it" in panel
    # each rule that hit shows the offending text, the match marked
    assert page.locator("#review-panel mark", has_text="bit.ly").count() >= 1
    screenshot(page, "campaign-held-for-review")

    # platform staff: Approve and send asks first, with the recipient count
    django_user_model.objects.create_superuser(username="staff", password=PASSWORD)
    page.context.clear_cookies()
    login(page, live_server, username="staff")
    page.goto(f"{live_server.url}/admin/campaigns/campaignreview/{campaign.pk}/change/")
    page.click("a:has-text('Approve and send…')")
    page.wait_for_load_state()
    assert "Approve and send to 3 recipients" in page.inner_text("#confirm-action")
    campaign.refresh_from_db()
    assert campaign.status == "pending_review"
    screenshot(page, "campaign-confirm-approve")
    _confirm(page)
    campaign.refresh_from_db()
    assert campaign.status == "sending"
