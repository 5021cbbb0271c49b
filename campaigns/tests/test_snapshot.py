"""What was scanned is what is sent: the content snapshot taken at the scan (every variant, every language)
is what the scan covers, what dispatch composes from (personalised per contact at send) and what the archive
shows; editing the template during the send changes nothing already scanned."""

from __future__ import annotations

from campaigns.models import Campaign, CampaignContentSnapshot
from campaigns.services import campaign_send_now
from delivery.models import EmailSend
from owlat.permissions import Authority
from testsupport.queue import drain_queue

SYSTEM = Authority.system("test")
OWNER = Authority.member("owner")


def _start(campaign, org):
    assert campaign_send_now(authority=SYSTEM, campaign_id=campaign.pk, organization_id=org.pk, actor="u").ok
    drain_queue(queue="default", max_tasks=1)  # the orchestrator: scan, snapshot, first page enqueued
    campaign.refresh_from_db()


def test_a_template_edited_after_the_scan_passed_changes_nothing_sent(
    make_campaign, org, topic, template, make_contact, smtp_sink
):
    make_contact(topic=topic, first_name="Ann", email="ann@example.com")
    make_contact(topic=topic, first_name="Bob", email="bob@example.com")
    campaign = make_campaign(archive_enabled=True)
    _start(campaign, org)
    assert campaign.status == "sending"
    snapshot = CampaignContentSnapshot.objects.filter(campaign=campaign)
    assert set(snapshot.values_list("language", flat=True)) == {"en", "de"}  # the fixture has a de text
    # the edit would score "blocked" (40) had it been scanned
    template.subject = "Free money for you"
    template.html_content = "<p>Cheap viagra, act now {{firstName}}</p>"
    template.save()
    drain_queue(max_tasks=5000)
    messages = smtp_sink.wait_for(2)
    by_rcpt = {m.rcpt_tos[0]: m for m in messages}
    for email, name in (("ann@example.com", "Ann"), ("bob@example.com", "Bob")):
        message = by_rcpt[email]
        assert message["Subject"] == f"News for {name}"  # personalised at send, from the frozen source
        assert f"Hello {name}" in message.html() and "viagra" not in message.html()
    campaign.refresh_from_db()
    assert campaign.status == "sent"
    assert "Hello" in campaign.archive_html_content and "viagra" not in campaign.archive_html_content


def test_variant_b_with_spam_content_is_blocked(make_campaign, org, topic, make_contact):
    from campaigns.abtest import ab_enable
    from templates.models import EmailTemplate

    b = EmailTemplate.objects.create(
        organization=org, name="B", subject="Free money for you", html_content="<p>Cheap viagra</p>"
    )
    for _ in range(4):
        make_contact(topic=topic)
    campaign = make_campaign()
    cfg = {
        "testType": "content",
        "variantBTemplateId": str(b.pk),
        "splitPercentage": 50,
        "winnerCriteria": "manual",
    }
    assert ab_enable(campaign=campaign, config=cfg, actor="u", authority=OWNER).ok
    _start(campaign, org)
    assert campaign.status == "draft"
    assert campaign.content_block_reason.startswith("Content blocked: ")
    assert "Variant B (en)" in campaign.content_block_reason
    assert not EmailSend.objects.filter(campaign_id=campaign.pk).exists()
    assert not CampaignContentSnapshot.objects.filter(campaign=campaign).exists()


def test_a_translation_is_scanned_and_sent_from_the_snapshot(
    make_campaign, org, topic, template, make_contact
):
    from delivery.models import LocalMessage

    template.html_translations = {"de": {"subject": "Free money", "htmlContent": "<p>Cheap viagra</p>"}}
    template.save()
    make_contact(topic=topic, language="de")
    campaign = make_campaign()
    _start(campaign, org)
    assert campaign.status == "draft" and "Variant A (de)" in campaign.content_block_reason

    template.html_translations = {"de": {"subject": "Neu für {{firstName}}", "htmlContent": "<p>Hallo</p>"}}
    template.save()
    Campaign.objects.filter(pk=campaign.pk).update(content_block_reason=None)
    _start(campaign, org)
    assert campaign.status == "sending"
    languages = set(
        CampaignContentSnapshot.objects.filter(campaign=campaign).values_list("language", flat=True)
    )
    assert languages == {"en", "de"}
    template.html_translations = {"de": {"subject": "Edited", "htmlContent": "<p>Edited</p>"}}
    template.save()
    drain_queue(max_tasks=5000)
    row = EmailSend.objects.get(campaign_id=campaign.pk)
    assert row.personalized_subject.startswith("Neu für")
    assert "Hallo" in LocalMessage.objects.get(send_id=row.pk).html


def test_the_ab_remainder_hours_later_is_sent_from_the_snapshot(
    make_campaign, org, topic, template, make_contact
):
    """Given a content test whose cohort was mailed, when both templates are edited before the winner is
    declared, then the remainder is composed from the scanned variant, not from the edited template."""
    from campaigns.abtest import ab_declare_winner, ab_enable
    from delivery.models import LocalMessage
    from templates.models import EmailTemplate

    b = EmailTemplate.objects.create(
        organization=org, name="B", subject="B news for {{firstName}}", html_content="<p>Variant B body</p>"
    )
    for _ in range(30):
        make_contact(topic=topic)
    campaign = make_campaign()
    cfg = {
        "testType": "content",
        "variantBTemplateId": str(b.pk),
        "splitPercentage": 20,
        "winnerCriteria": "manual",
    }
    assert ab_enable(campaign=campaign, config=cfg, actor="u", authority=OWNER).ok
    _start(campaign, org)
    drain_queue(max_tasks=5000)
    campaign.refresh_from_db()
    assert (campaign.status, campaign.ab_test_status) == ("sending", "testing")
    tested = set(EmailSend.objects.filter(campaign_id=campaign.pk).values_list("pk", flat=True))
    assert 0 < len(tested) < 30
    for t in (template, b):
        t.subject = "Edited subject"
        t.html_content = "<p>Edited body</p>"
        t.save()
    assert ab_declare_winner(campaign_id=campaign.pk, winner="B", actor="u", authority=OWNER).ok
    drain_queue(max_tasks=5000)
    campaign.refresh_from_db()
    assert campaign.status == "sent"
    remainder = EmailSend.objects.filter(campaign_id=campaign.pk).exclude(pk__in=tested)
    assert remainder.count() == 30 - len(tested) and set(remainder.values_list("ab_variant", flat=True)) == {
        "B"
    }
    for row in remainder:
        assert row.personalized_subject.startswith("B news for")
        html = LocalMessage.objects.get(send_id=row.pk).html
        assert "Variant B body" in html and "Edited" not in html
