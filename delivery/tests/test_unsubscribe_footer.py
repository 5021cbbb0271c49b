"""Visible unsubscribe (issue 11 item 4): `{{unsubscribeUrl}}` / `{{preferencesUrl}}`, the automation footer
(once, never twice; per-automation switch), segment campaigns' footer, and optional automation tracking —
dispatched by the worker to a real SMTP server on loopback."""

from __future__ import annotations

import re
import uuid

import pytest

from automations.models import Automation
from delivery.models import TransactionalSend
from delivery.services import automation_email_queue
from delivery.worker import dispatch_batch
from templates.models import EmailTemplate

UNSUB_RE = re.compile(r"/unsub/[^\"'\s<>]+")


@pytest.fixture
def site(settings):
    settings.SITE_URL = "https://owlat.example"
    settings.DELIVERY_OPEN_PIXEL_MIN_TEXT = 0  # the short test bodies get the open pixel too
    return settings


def _template(org, html: str) -> EmailTemplate:
    return EmailTemplate.objects.create(
        organization=org, name="T", subject="Hi {{firstName}}", html_content=html
    )


def _automation(org, **switches) -> Automation:
    return Automation.objects.create(
        organization=org, name="Welcome", trigger_type="contact_created", **switches
    )


def _send_automation(org, contact, template, automation, smtp_sink):
    result = automation_email_queue(
        organization_id=str(org.pk),
        contact_id=str(contact.pk),
        automation_id=str(automation.pk),
        email_template_id=str(template.pk),
    )
    assert result.status == "queued", result.reason
    summary = dispatch_batch("transactional", [result.send_id], pacer=lambda: None, drain=False)
    assert summary.sent == 1, summary
    [message] = smtp_sink.wait_for(1)
    return message, TransactionalSend.objects.get(pk=result.send_id)


def test_automation_mail_gets_a_footer_with_the_unsubscribe_link(org, contact, site, smtp_sink):
    template = _template(org, "<html><body><p>Hello {{firstName}}</p></body></html>")
    message, _ = _send_automation(org, contact, template, _automation(org), smtp_sink)
    html, text = message.html(), message.text()
    assert 'class="owlat-footer"' in html
    assert len(UNSUB_RE.findall(html)) == 1
    assert "Manage preferences" in html
    assert "1 Main Street" in html  # the organization's postal address
    assert "Unsubscribe: https://owlat.example/unsub/" in text
    # the footer link is the one the List-Unsubscribe header carries
    assert UNSUB_RE.findall(html)[0] in message["List-Unsubscribe"]


def test_footer_link_is_not_repeated_when_the_template_has_unsubscribe_url(org, contact, site, smtp_sink):
    template = _template(
        org,
        '<html><body><p>Hello</p><p><a href="{{unsubscribeUrl}}">Leave</a> '
        '<a href="{{preferencesUrl}}">Settings</a></p></body></html>',
    )
    message, _ = _send_automation(org, contact, template, _automation(org), smtp_sink)
    html = message.html()
    assert len(UNSUB_RE.findall(html)) == 1  # the template's own link, no second one in the footer
    assert ">Leave</a>" in html and ">Unsubscribe</a>" not in html
    assert "Manage preferences" not in html and "/preferences/" in html
    assert "{{" not in html


def test_transactional_flow_switch_turns_the_footer_off(org, contact, site, smtp_sink):
    template = _template(org, "<p>Your password reset code</p>")
    message, _ = _send_automation(
        org, contact, template, _automation(org, unsubscribe_footer=False), smtp_sink
    )
    assert "owlat-footer" not in message.html()
    assert not UNSUB_RE.findall(message.html())
    assert message["List-Unsubscribe"].startswith("<https://owlat.example/unsub/")  # the header stays


def test_automation_tracking_is_off_by_default_and_on_per_automation(
    org, make_contact, site, smtp_sink, client
):
    template = _template(org, '<p><a href="https://example.org/docs">Docs</a></p>')
    plain, _ = _send_automation(
        org, make_contact(email="a@example.com"), template, _automation(org), smtp_sink
    )
    assert "/t/o/" not in plain.html() and "/t/c/" not in plain.html()
    smtp_sink.clear()
    tracked, send = _send_automation(
        org, make_contact(email="b@example.com"), template, _automation(org, track_engagement=True), smtp_sink
    )
    html = tracked.html()
    assert "https://example.org/docs" not in html and "/t/c/" in html
    pixel = re.search(r'src="https://owlat\.example(/t/o/[^"]+)"', html).group(1)
    assert client.get(pixel).status_code == 200
    send.refresh_from_db()
    assert send.status == "opened"
    click = re.search(r'href="https://owlat\.example(/t/c/[^"]+)"', html).group(1)
    response = client.get(click)
    assert response.status_code == 302 and response["Location"] == "https://example.org/docs"
    send.refresh_from_db()
    assert send.status == "clicked"


def _send_campaign(org, contact, template, smtp_sink, *, topic: bool):
    from delivery.services import CampaignRecipient, CampaignSendContext, create_batch

    result = create_batch(
        organization_id=org.pk,
        campaign_id=str(uuid.uuid4()),
        context=CampaignSendContext(
            from_email="news@acme.test",
            from_name="Acme",
            topic_id=str(uuid.uuid4()) if topic else None,
            topic_name="News" if topic else "",
            track=False,
        ),
        sends=[
            CampaignRecipient(
                contact_id=str(contact.pk), email=contact.email, email_template_id=str(template.pk)
            )
        ],
        enqueue=False,
    )
    summary = dispatch_batch("campaign", list(result.values()), pacer=lambda: None)
    assert summary.sent == 1, summary
    [message] = smtp_sink.wait_for(1)
    return message


def test_segment_campaigns_get_the_visible_unsubscribe_link_too(org, contact, site, smtp_sink):
    template = _template(org, "<html><body><p>News</p></body></html>")
    message = _send_campaign(org, contact, template, smtp_sink, topic=False)
    assert len(UNSUB_RE.findall(message.html())) == 1
    assert ">Unsubscribe</a>" in message.html()


def test_campaign_footer_follows_the_no_duplicate_rule(org, contact, site, smtp_sink):
    template = _template(org, '<html><body><p><a href="{{unsubscribeUrl}}">Opt out</a></p></body></html>')
    message = _send_campaign(org, contact, template, smtp_sink, topic=True)
    html = message.html()
    assert len(UNSUB_RE.findall(html)) == 1 and ">Opt out</a>" in html
    assert "Manage preferences" in html  # the topic campaign's preference link is still offered


def test_automation_admin_form_offers_both_switches_with_help_text():
    from automations.admin_forms.editor import AutomationForm

    form = AutomationForm()
    assert form.fields["unsubscribe_footer"].initial is True
    assert form.fields["track_engagement"].initial is False
    assert "transactional" in form.fields["unsubscribe_footer"].help_text
    assert "Off by default" in form.fields["track_engagement"].help_text


def test_duplicating_an_automation_keeps_its_mail_switches(org):
    from automations.services import automation_duplicate

    source = _automation(org, unsubscribe_footer=False, track_engagement=True)
    copy = automation_duplicate(automation_id=source.pk, organization_id=org.pk, actor="test")
    assert (copy.unsubscribe_footer, copy.track_engagement) == (False, True)


def test_transactional_templates_can_use_the_link_variables(org, contact, site):
    from delivery.compose import compose_transactional
    from templates.models import TransactionalEmail

    template = TransactionalEmail.objects.create(
        organization=org,
        slug="receipt",
        name="Receipt",
        subject="Receipt",
        html_content='<p>Thanks</p><p><a href="{{preferencesUrl}}">Email settings</a></p>',
    )
    send = TransactionalSend.objects.create(
        organization=org,
        kind="transactional",
        transactional_email=template,
        contact=contact,
        email=contact.email,
    )
    message = compose_transactional(send)
    assert 'href="https://owlat.example/preferences/' in message.html
    assert "owlat-footer" not in message.html and "List-Unsubscribe" not in message.headers
