"""Inbound mail through an ESP: django-anymail's inbound webhooks mounted at `/webhooks/<esp>/inbound/`
(delivery.inbound_webhooks), each with its provider's authentication, reach the inbox's receive path; while the
authentication is not configured the endpoint answers 404, a wrong signature 400."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import time

import pytest
from django.test import Client

from inbox.models import InboundMessage
from owlat.models import Domain
from owlat.organizations import organization_create

pytestmark = pytest.mark.django_db

SECRET = "user:inbound-basic-auth-secret"
MAILGUN_KEY = "key-mailgun-inbound-signing"


def raw(message_id: str) -> str:
    return (
        'From: "Jane Doe" <jane@example.com>\r\nTo: support@acme.test\r\nSubject: Invoice question\r\n'
        f"Message-ID: <{message_id}@example.com>\r\nDate: Mon, 30 Nov 2026 10:00:00 +0000\r\n"
        "MIME-Version: 1.0\r\nContent-Type: text/plain; charset=utf-8\r\n\r\nWhere is my invoice?\r\n"
    )


@pytest.fixture
def org(settings):
    settings.ANYMAIL = {"WEBHOOK_SECRET": SECRET, "MAILGUN_WEBHOOK_SIGNING_KEY": MAILGUN_KEY}
    org = organization_create(name="Acme", default_from_email="support@acme.test", default_from_name="Acme")
    Domain.objects.create(organization=org, domain="acme.test", status="verified")
    return org


def basic_auth() -> dict[str, str]:
    return {"HTTP_AUTHORIZATION": "Basic " + base64.b64encode(SECRET.encode()).decode()}


def received(org, message_id: str) -> InboundMessage:
    return InboundMessage.objects.get(organization=org, message_id=f"<{message_id}@example.com>")


def test_postmark_inbound_reaches_the_inbox(org):
    body = json.dumps({"RawEmail": raw("pm1"), "Headers": [], "FromFull": {"Email": "jane@example.com"}})
    r = Client().post("/webhooks/postmark/inbound/", body, content_type="application/json", **basic_auth())
    assert r.status_code == 200, r.content
    message = received(org, "pm1")
    assert message.subject == "Invoice question" and message.headers["x-anymail-esp"] == "Postmark"
    wrong = Client().post(
        "/webhooks/postmark/inbound/",
        body,
        content_type="application/json",
        HTTP_AUTHORIZATION="Basic " + base64.b64encode(b"user:wrong").decode(),
    )
    assert wrong.status_code == 400


def test_sendgrid_inbound_raw_mime_reaches_the_inbox(org):
    form = {"email": raw("sg1"), "to": "support@acme.test", "from": "jane@example.com"}
    r = Client().post("/webhooks/sendgrid/inbound/", form, **basic_auth())
    assert r.status_code == 200, r.content
    assert received(org, "sg1").from_email == "jane@example.com"


def _mailgun_signature(key: str) -> dict[str, str]:
    timestamp, token = str(int(time.time())), "a" * 50
    digest = hmac.new(key.encode(), f"{timestamp}{token}".encode(), hashlib.sha256).hexdigest()
    return {"timestamp": timestamp, "token": token, "signature": digest}


def test_mailgun_inbound_needs_its_signature(org):
    form = {"body-mime": raw("mg1"), "recipient": "support@acme.test", "sender": "jane@example.com"}
    # anymail checks the shared basic auth too once WEBHOOK_SECRET is set, then Mailgun's signature
    r = Client().post(
        "/webhooks/mailgun/inbound/", {**form, **_mailgun_signature(MAILGUN_KEY)}, **basic_auth()
    )
    assert r.status_code == 200, r.content
    assert received(org, "mg1").subject == "Invoice question"
    forged = {**form, "body-mime": raw("mg2"), **_mailgun_signature("not-the-key")}
    assert Client().post("/webhooks/mailgun/inbound/", forged, **basic_auth()).status_code == 400
    assert not InboundMessage.objects.filter(message_id="<mg2@example.com>").exists()


@pytest.mark.parametrize("slug", ["amazon_ses", "postmark", "resend", "mailgun", "sendgrid"])
def test_an_unconfigured_inbound_webhook_answers_404(settings, slug):
    settings.ANYMAIL = {}
    settings.PROVIDER_WEBHOOKS_ALLOW_UNSIGNED = False
    r = Client().post(f"/webhooks/{slug}/inbound/", "{}", content_type="application/json")
    assert r.status_code == 404 and "not configured" in r.json()["error"]


def test_resend_tracking_webhook_accepts_its_svix_signature(settings):
    """svix is a production dependency: with RESEND_SIGNING_SECRET set, a signed event is accepted (no 404)."""
    import datetime as dt

    from svix.webhooks import Webhook

    secret = "whsec_" + base64.b64encode(b"resend-signing-secret-0123456789").decode()
    settings.ANYMAIL = {"RESEND_SIGNING_SECRET": secret}
    body = json.dumps(
        {"type": "email.delivered", "created_at": "2026-12-01T10:00:00Z", "data": {"email_id": "re_unknown"}}
    )
    now = dt.datetime.now(dt.UTC)
    signature = Webhook(secret).sign("msg_1", now, body)
    headers = {"HTTP_SVIX_ID": "msg_1", "HTTP_SVIX_TIMESTAMP": str(int(now.timestamp()))}
    url = "/webhooks/resend/tracking/"
    r = Client().post(url, body, content_type="application/json", HTTP_SVIX_SIGNATURE=signature, **headers)
    assert r.status_code == 200, r.content
    forged = Client().post(
        url, body, content_type="application/json", HTTP_SVIX_SIGNATURE="v1,AAAA", **headers
    )
    assert forged.status_code == 400


# --- attachments through the ESP webhooks: stored and judged as on every other intake ---------------------

PDF = b"%PDF-1.4 invoice ATTACHMENT-BYTES"


def _stored(org, message_id: str) -> dict[str, object]:
    from inbox.models import InboundAttachment

    m = received(org, message_id)
    return {a.filename: a for a in InboundAttachment.objects.filter(inbound_message=m)}


def test_postmark_json_attachments_are_stored_and_a_dangerous_one_quarantines(org, settings, tmp_path):
    settings.MEDIA_ROOT = str(tmp_path)
    body = json.dumps(
        {
            "MessageID": "x",
            "FromFull": {"Email": "jane@example.com", "Name": "Jane"},
            "ToFull": [{"Email": "support@acme.test"}],
            "Subject": "Invoice",
            "TextBody": "See attached.",
            "Headers": [{"Name": "Message-ID", "Value": "<pm-att@example.com>"}],
            "Attachments": [
                {
                    "Name": "invoice.pdf",
                    "ContentType": "application/pdf",
                    "Content": base64.b64encode(PDF).decode(),
                },
                {"Name": "invoice.pdf.exe", "ContentType": "application/octet-stream", "Content": "TVqQ"},
            ],
        }
    )
    r = Client().post("/webhooks/postmark/inbound/", body, content_type="application/json", **basic_auth())
    assert r.status_code == 200, r.content
    rows = _stored(org, "pm-att")
    assert rows["invoice.pdf"].is_stored and rows["invoice.pdf"].file.read() == PDF
    assert rows["invoice.pdf.exe"].is_dangerous


def test_mailgun_form_attachments_are_stored_within_the_size_limit(org, settings, tmp_path):
    from django.core.files.uploadedfile import SimpleUploadedFile

    settings.MEDIA_ROOT = str(tmp_path)
    settings.INBOX_ATTACHMENT_MAX_BYTES = 100
    form = {
        "recipient": "support@acme.test",
        "sender": "jane@example.com",
        "from": "Jane <jane@example.com>",
        "subject": "Invoice",
        "body-plain": "See attached.",
        "message-headers": json.dumps(
            [
                ["Message-Id", "<mg-att@example.com>"],
                ["From", "Jane <jane@example.com>"],
                ["To", "support@acme.test"],
            ]
        ),
        "attachment-count": "2",
        "attachment-1": SimpleUploadedFile("invoice.pdf", PDF, content_type="application/pdf"),
        "attachment-2": SimpleUploadedFile("big.zip", b"z" * 500, content_type="application/zip"),
        **_mailgun_signature(MAILGUN_KEY),
    }
    r = Client().post("/webhooks/mailgun/inbound/", form, **basic_auth())
    assert r.status_code == 200, r.content
    rows = _stored(org, "mg-att")
    assert rows["invoice.pdf"].is_stored and rows["invoice.pdf"].file.read() == PDF
    assert not rows["big.zip"].is_stored and rows["big.zip"].size == 500


def test_sendgrid_parsed_form_attachments_are_stored(org, settings, tmp_path):
    from django.core.files.uploadedfile import SimpleUploadedFile

    settings.MEDIA_ROOT = str(tmp_path)
    form = {
        "headers": "Message-ID: <sg-att@example.com>\r\nFrom: Jane <jane@example.com>\r\nTo: support@acme.test\r\n",
        "from": "Jane <jane@example.com>",
        "to": "support@acme.test",
        "subject": "Invoice",
        "text": "See attached.",
        "attachments": "2",
        "attachment-info": json.dumps(
            {
                "attachment1": {"filename": "invoice.pdf", "type": "application/pdf"},
                "attachment2": {
                    "filename": "form.docm",
                    "type": "application/vnd.ms-word.document.macroEnabled.12",
                },
            }
        ),
        "attachment1": SimpleUploadedFile("invoice.pdf", PDF, content_type="application/pdf"),
        "attachment2": SimpleUploadedFile("form.docm", b"PK macro", content_type="application/octet-stream"),
    }
    r = Client().post("/webhooks/sendgrid/inbound/", form, **basic_auth())
    assert r.status_code == 200, r.content
    rows = _stored(org, "sg-att")
    assert rows["invoice.pdf"].file.read() == PDF and rows["form.docm"].is_dangerous
