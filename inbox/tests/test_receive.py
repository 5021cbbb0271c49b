"""AGT-01 … AGT-03: parsing, contact and thread resolution, de-duplication, automated mail, suppression,
size limits; the raw RFC 5322 endpoint and django-anymail's inbound signal."""

from __future__ import annotations

import base64

import pytest
from django.test import Client

from inbox.models import AgentConfig, ConversationThread, InboundMessage
from inbox.receive import MessageTooLarge, parse_raw
from owlat.models import Contact, ContactActivity, Domain

pytestmark = pytest.mark.django_db

RAW = (
    b"""From: "Jane Doe" <Jane@Example.com>
To: support@acme.test
Subject: Invoice question
Message-ID: <abc123@example.com>
Date: Mon, 30 Nov 2026 10:00:00 +0000
Authentication-Results: mx.acme.test; spf=pass smtp.mailfrom=example.com; dkim=pass header.d=example.com; dmarc=pass
MIME-Version: 1.0
Content-Type: multipart/alternative; boundary="b1"

--b1
Content-Type: text/plain; charset=utf-8
Content-Transfer-Encoding: base64

"""
    + base64.encodebytes("Hello, where is my invoice? Grüße".encode())
    + b"""
--b1
Content-Type: text/html; charset=utf-8

<p>Hello, where is my <b>invoice</b>?</p>
--b1--
"""
)


def test_parse_raw_decodes_parts_and_authentication(settings):
    settings.INBOX_AUTHSERV_ID = ["mx.acme.test"]
    p = parse_raw(RAW)
    assert (
        p.message_id == "<abc123@example.com>"
        and p.from_email == "jane@example.com"
        and p.from_name == "Jane Doe"
    )
    assert p.text_body.strip() == "Hello, where is my invoice? Grüße"
    assert "<b>invoice</b>" in p.html_body
    assert p.authentication == {"spf": "pass", "dkim": "pass", "dmarc": "pass"}
    assert p.to == ["support@acme.test"]


def test_receive_creates_contact_thread_activity_and_dedupes(org, receive):
    r = receive(message_id="<x1@example.com>")
    assert r.created and r.message.processing_status == "received"
    contact = Contact.objects.get(organization=org, email="jane@example.com")
    assert contact.source == "inbound" and contact.first_name == "Jane"
    assert ContactActivity.objects.filter(contact=contact, activity_type="inbound_received").count() == 1
    again = receive(message_id="<x1@example.com>")
    assert not again.created and again.pipeline == "duplicate" and again.message.pk == r.message.pk
    assert InboundMessage.objects.filter(organization=org).count() == 1


def test_thread_by_in_reply_to_then_by_subject(org, receive):
    first = receive(message_id="<t1@example.com>", subject="Order 42")
    reply = receive(message_id="<t2@example.com>", subject="Something else", in_reply_to="<t1@example.com>")
    same_subject = receive(message_id="<t3@example.com>", subject="Re: Order 42")
    other = receive(message_id="<t4@example.com>", subject="New topic")
    assert reply.message.thread_id == first.message.thread_id == same_subject.message.thread_id
    assert other.message.thread_id != first.message.thread_id
    assert ConversationThread.objects.filter(organization=org).count() == 2


@pytest.mark.parametrize(
    ("headers", "kw"),
    [
        ({"auto-submitted": "auto-replied"}, {}),
        ({"list-id": "<news.example.com>"}, {}),
        ({"precedence": "bulk"}, {}),
        ({"x-owlat-forwarded": "1"}, {}),
        ({}, {"to": ["jane@example.com"]}),
    ],
)
def test_automated_mail_is_stored_without_pipeline(headers, kw, receive):
    r = receive(headers=headers, **kw)
    assert r.created and r.pipeline == "automated" and r.message.processing_status == "received"


def test_auto_submitted_no_is_not_automated(receive):
    assert receive(headers={"auto-submitted": "no"}).pipeline == "started"


def test_suppressed_sender_is_archived(org, receive):
    from owlat.suppression import suppress

    suppress(organization_id=org.pk, email="jane@example.com", reason="manual")
    r = receive()
    assert r.pipeline == "blocked" and r.message.processing_status == "archived"
    assert r.message.archive_reason == "sender_blocked"


def test_inbox_flag_off_stores_without_pipeline(org, receive):
    from owlat.models import OrganizationSettings

    s = OrganizationSettings.objects.get(organization=org)
    s.feature_flags = {**s.feature_flags, "inbox": False}
    s.save()
    assert receive().pipeline == "disabled"


def test_pipeline_start_limit_per_sender(receive, settings):
    settings.INBOX_START_BURST_PER_SENDER = 2
    results = [receive().pipeline for _ in range(3)]
    assert results == ["started", "started", "rate_limited"]


def test_size_limit(receive, settings):
    settings.INBOX_MAX_MESSAGE_BYTES = 100
    with pytest.raises(MessageTooLarge, match="Message is too large"):
        receive(text_body="x" * 200)


def test_raw_endpoint(org, settings):
    token = AgentConfig.objects.get_or_create(organization=org)[0].inbound_secret
    client = Client()
    url, auth = "/inbound/raw", {"HTTP_AUTHORIZATION": f"Bearer {token}"}
    r = client.post(url, data=RAW, content_type="message/rfc822", **auth)
    assert r.status_code == 201, r.content
    assert r.json()["data"]["messageId"] == "<abc123@example.com>"
    r2 = client.post(url, data=RAW, content_type="message/rfc822", **auth)
    assert r2.status_code == 200 and r2.json()["data"]["duplicate"] is True
    wrong = client.post(url, data=RAW, content_type="message/rfc822", HTTP_AUTHORIZATION="Bearer inb_wrong")
    assert wrong.status_code == 401 and "Authorization: Bearer" in wrong.json()["error"]["message"]
    bad = client.post(url, data=b"Subject: hi\n\nno sender", content_type="message/rfc822", **auth)
    assert bad.status_code == 400 and bad.json()["error"]["field"] == "from"
    settings.INBOX_MAX_MESSAGE_BYTES = 50
    big = client.post(url, data=RAW, content_type="message/rfc822", **auth)
    assert big.status_code == 413 and "too large" in big.json()["error"]["message"]
    assert big.json()["error"]["field"] == "body" and big.json()["error"]["limit"] == 50


def test_anymail_inbound_signal_reaches_the_receive_path(org, settings):
    settings.INBOX_AUTHSERV_ID = ["mx.acme.test"]
    from anymail.inbound import AnymailInboundMessage
    from anymail.signals import AnymailInboundEvent, inbound

    Domain.objects.create(organization=org, domain="acme.test", status="verified")
    message = AnymailInboundMessage.parse_raw_mime_bytes(RAW)
    inbound.send(
        sender=object, event=AnymailInboundEvent(event_type="inbound", message=message), esp_name="Postmark"
    )
    m = InboundMessage.objects.get(organization=org, message_id="<abc123@example.com>")
    assert m.dkim_result == "pass" and m.headers["x-anymail-esp"] == "Postmark"
