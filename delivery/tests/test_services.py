"""Send-row creation: campaign batches (DLV-03), the automation email step (AUT-31, D-11)."""

from __future__ import annotations

import uuid

import pytest

from delivery.models import EmailSend, TransactionalSend
from delivery.services import (
    AutomationEmailResult,
    CampaignRecipient,
    automation_email_queue,
    create_batch,
)
from testsupport import queued_tasks

AUTOMATION_ID = "00000000-0000-0000-0000-0000000000aa"


@pytest.fixture
def smtp_provider(settings):
    settings.EMAIL_PROVIDER = "smtp"
    settings.EMAIL_URL = "smtp://127.0.0.1:2525"


def queue(org, contact, template_id, subject_override=None):
    return automation_email_queue(
        organization_id=str(org.pk),
        contact_id=str(contact.pk),
        automation_id=AUTOMATION_ID,
        email_template_id=template_id,
        subject_override=subject_override,
    )


@pytest.mark.django_db
def test_create_batch_is_idempotent_per_campaign_and_contact(
    org, template, context, make_contact, campaign_id
):
    contacts = [make_contact(email=f"c{i}@example.com") for i in range(3)]
    sends = [
        CampaignRecipient(
            contact_id=str(c.pk), email=c.email, first_name="X", email_template_id=str(template.pk)
        )
        for c in contacts
    ]
    first = create_batch(organization_id=org.pk, campaign_id=campaign_id, context=context, sends=sends[:2])
    assert set(first) == {str(contacts[0].pk), str(contacts[1].pk)}
    # the page is processed again after a crash, now with one more contact: only that one is inserted
    second = create_batch(organization_id=org.pk, campaign_id=campaign_id, context=context, sends=sends)
    assert set(second) == {str(contacts[2].pk)}
    assert EmailSend.objects.filter(campaign_id=campaign_id).count() == 3
    jobs = queued_tasks("campaign")
    assert [t.args[1] for t in jobs] == [list(first.values()), list(second.values())]
    # a third run inserts and enqueues nothing
    assert create_batch(organization_id=org.pk, campaign_id=campaign_id, context=context, sends=sends) == {}
    assert len(queued_tasks("campaign")) == 2
    row = EmailSend.objects.get(pk=second[str(contacts[2].pk)])
    assert (row.status, row.contact_email, row.contact_first_name) == ("queued", "c2@example.com", "X")


@pytest.mark.django_db
def test_create_batch_jobs_hold_at_most_100_rows(org, template, context, make_contact, campaign_id):
    contacts = [make_contact(email=f"b{i}@example.com") for i in range(230)]
    sends = [
        CampaignRecipient(contact_id=str(c.pk), email=c.email, email_template_id=str(template.pk))
        for c in contacts
    ]
    create_batch(organization_id=org.pk, campaign_id=campaign_id, context=context, sends=sends)
    assert [len(t.args[1]) for t in queued_tasks("campaign")] == [100, 100, 30]


@pytest.mark.django_db
def test_automation_email_queued(org, template, contact, smtp_provider):
    result = queue(org, contact, str(template.pk), subject_override="News for {{firstName}}\r\nBcc: x")
    assert isinstance(result, AutomationEmailResult)
    assert result.status == "queued" and result.reason is None
    send = TransactionalSend.objects.get(pk=result.send_id)
    assert (send.kind, send.status, send.email, send.contact_id) == (
        "automation",
        "queued",
        contact.email,
        contact.pk,
    )
    assert str(send.automation_id) == AUTOMATION_ID
    assert send.subject == "News for Jane Bcc: x"  # CR/LF stripped
    assert send.from_email == "news@acme.test" and send.from_name == "Acme News"
    assert [t.args for t in queued_tasks("transactional")] == [("transactional", [result.send_id])]


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("case", "reason"),
    [
        ("no_template_id", "No email template configured"),
        ("missing_template", "Email template not found"),
        ("foreign_template", "Email template not found"),
        ("malformed_template_id", "Email template not found"),
        ("no_html", "Email template has no HTML content"),
        (
            "no_sender",
            "Email sender not configured. Please set a default sender email in organization settings.",
        ),
        ("no_email", "Contact has no email address"),
        ("no_provider", "No delivery provider configured"),
    ],
)
def test_automation_email_failures_in_order(case, reason, org, other_org, template, make_contact, settings):
    from templates.models import EmailTemplate

    settings.EMAIL_PROVIDER = "" if case == "no_provider" else "local"
    contact = make_contact(email=None if case == "no_email" else "x@example.com")
    template_id = str(template.pk)
    if case == "no_template_id":
        template_id = None
    elif case == "missing_template":
        template_id = str(uuid.uuid4())
    elif case == "malformed_template_id":
        template_id = "nope"
    elif case == "foreign_template":
        template_id = str(
            EmailTemplate.objects.create(
                organization=other_org, name="x", subject="s", html_content="<p>x</p>"
            ).pk
        )
    elif case == "no_html":
        template_id = str(
            EmailTemplate.objects.create(organization=org, name="empty", subject="s", html_content=" ").pk
        )
    elif case == "no_sender":
        org.settings.default_from_email = ""
        org.settings.save()
    result = queue(org, contact, template_id)
    assert (result.status, result.send_id, result.reason) == ("failed", None, reason)
    assert not TransactionalSend.objects.exists()


@pytest.mark.django_db
def test_automation_email_skipped_for_unsubscribed_or_suppressed(org, template, make_contact, smtp_provider):
    from django.utils import timezone

    from owlat.suppression import suppress

    unsubscribed = make_contact(email="u@example.com", unsubscribed_at=timezone.now())
    assert queue(org, unsubscribed, str(template.pk)) == AutomationEmailResult(
        "skipped", None, "Contact unsubscribed"
    )
    suppressed = make_contact(email="s@example.com")
    suppress(organization_id=org.pk, email="S@example.com", reason="unengaged")
    assert queue(org, suppressed, str(template.pk)) == AutomationEmailResult(
        "skipped", None, "Recipient suppressed"
    )
    assert not TransactionalSend.objects.exists()
    assert queued_tasks() == []
