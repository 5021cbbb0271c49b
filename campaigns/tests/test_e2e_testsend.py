"""End to end, real worker processes and the loopback SMTP sink: a campaign naming no sender goes out from the
organization's default sender with its display name in the From header, both as a test send (subject marked
`[Test]`, no campaign send row) and as the campaign itself."""

from __future__ import annotations

import pytest

from campaigns.models import Campaign
from delivery.models import EmailSend, TransactionalSend
from owlat.permissions import Authority

SYSTEM = Authority.system("test")

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def world():
    from campaigns.services import campaign_create
    from owlat.models import Contact, ContactTopic, Topic
    from templates.models import EmailTemplate
    from testsupport.world import sending_organization

    org = sending_organization(
        "Acme", "acme.test", sender="news", sender_name="Acme News", postal_address="Acme Inc., 1 Main St"
    )
    topic = Topic.objects.create(organization=org, name="Newsletter", require_double_opt_in=False)
    contact = Contact.objects.create(organization=org, email="reader@example.com", first_name="Rea")
    ContactTopic.objects.create(organization=org, contact=contact, topic=topic)
    template = EmailTemplate.objects.create(
        organization=org, name="May", subject="May news", html_content="<p>Hello {{firstName}}</p>"
    )
    campaign = campaign_create(
        organization_id=org.pk,
        actor="user-1",
        authority=SYSTEM,
        fields={
            "name": "May",
            "email_template_id": template.pk,
            "subject": "May news for {{firstName|'you'}}",
            "audience": {"kind": "topic", "topicId": str(topic.pk)},
        },
    )
    return {"org": org, "campaign": campaign}


def test_test_send_and_campaign_carry_the_default_senders_display_name(world, smtp_sink, workers):
    from campaigns.services import campaign_send_now
    from campaigns.testsend import campaign_test_send

    # Given a campaign with no from address, when an operator test-sends it to two addresses
    campaign = world["campaign"]
    assert campaign.from_email is None
    campaign_test_send(campaign=campaign, to=["olivia@acme.test", "qa@example.com"], authority=SYSTEM)
    tests = smtp_sink.wait_for(2, timeout=30)
    # then both arrive marked as a test, from the organization's default sender with its name
    by_rcpt = {m.rcpt_tos[0]: m for m in tests}
    assert set(by_rcpt) == {"olivia@acme.test", "qa@example.com"}
    assert by_rcpt["qa@example.com"]["Subject"] == "[Test] May news for you"
    assert by_rcpt["qa@example.com"]["From"] == "Acme News <news@acme.test>"
    assert TransactionalSend.objects.filter(kind="test").count() == 2
    assert not EmailSend.objects.filter(campaign_id=campaign.pk).exists()
    # and when it is sent for real, the campaign's mail has the same From
    assert campaign_send_now(
        authority=SYSTEM, campaign_id=campaign.pk, organization_id=world["org"].pk, actor="user-1"
    ).ok
    workers.wait_until(lambda: Campaign.objects.get(pk=campaign.pk).status == "sent", timeout=120)
    [real] = [m for m in smtp_sink.wait_for(3, timeout=30) if m.rcpt_tos == ["reader@example.com"]]
    assert real["Subject"] == "May news for Rea"
    assert real["From"] == "Acme News <news@acme.test>"
    assert Campaign.objects.get(pk=campaign.pk).stats_sent == 1
