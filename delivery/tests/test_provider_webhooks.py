"""Provider webhooks hardened (issue 13 item 2): authentication required for every mounted provider unless
explicitly waived for development, events applied only to rows handed to that provider, 4xx (never 500) for
unconfigured providers and malformed bodies."""

from __future__ import annotations

import base64
import json

import pytest
from django.test import Client

from delivery.lifecycle import SendRef, send_transition
from delivery.webhooks import PROVIDER_WEBHOOKS
from owlat.models import BlockedEmail

AUTH = "Basic " + base64.b64encode(b"u:p").decode()
SLUGS = [hook.slug for hook in PROVIDER_WEBHOOKS]


def complaint(message_id="pm-abc", email="jane@example.com"):
    return {
        "RecordType": "SpamComplaint",
        "MessageID": message_id,
        "Email": email,
        "BouncedAt": "2026-01-01T10:00:00Z",
        "Type": "SpamComplaint",
        "TypeCode": 512,
    }


def post(path, body, *, auth=AUTH, content_type="application/json"):
    headers = {"HTTP_AUTHORIZATION": auth} if auth else {}
    data = body if isinstance(body, bytes | str) else json.dumps(body)
    return Client(raise_request_exception=False).post(path, data=data, content_type=content_type, **headers)


@pytest.fixture
def sent_by(make_campaign_send):
    def make(provider, message_id="pm-abc"):
        send = make_campaign_send()
        send_transition(
            SendRef.of(send), "sent", {"provider_message_id": message_id, "provider_type": provider}
        )
        return send

    return make


@pytest.mark.django_db
def test_unsigned_complaint_is_not_applied_when_the_secret_is_unset(settings, sent_by, org):
    # the probe's reproduction: no secret configured, an unauthenticated POST tried to mark a send complained
    settings.ANYMAIL = {}
    send = sent_by("postmark")
    response = post("/webhooks/postmark/tracking/", complaint(email=send.contact_email), auth=None)
    assert response.status_code == 404
    send.refresh_from_db()
    assert send.status == "sent"
    assert not BlockedEmail.objects.filter(organization=org).exists()


@pytest.mark.django_db
@pytest.mark.parametrize("slug", SLUGS)
def test_every_mounted_provider_answers_404_while_unconfigured(settings, slug):
    settings.ANYMAIL = {}
    assert post(f"/webhooks/{slug}/tracking/", {"anything": 1}).status_code == 404


@pytest.mark.django_db
@pytest.mark.parametrize("slug", ["brevo", "sparkpost", "mailjet", "nope"])
def test_unsupported_providers_are_not_mounted(settings, slug):
    settings.ANYMAIL = {"WEBHOOK_SECRET": "u:p"}
    assert post(f"/webhooks/{slug}/tracking/", {}).status_code == 404


@pytest.mark.django_db
def test_development_waiver_applies_unsigned_events(settings, sent_by):
    settings.ANYMAIL = {}
    settings.PROVIDER_WEBHOOKS_ALLOW_UNSIGNED = True
    send = sent_by("postmark")
    assert post("/webhooks/postmark/tracking/", complaint(), auth=None).status_code == 200
    send.refresh_from_db()
    assert send.status == "complained"
    # a provider that signs with a key still needs it: the waiver does not make it answer 500
    assert post("/webhooks/mailgun/tracking/", {"signature": {}}).status_code == 404


@pytest.mark.django_db
def test_an_event_applies_only_to_rows_sent_by_that_provider(settings, sent_by, org):
    settings.ANYMAIL = {"WEBHOOK_SECRET": "u:p"}
    settings.EMAIL_PROVIDER = "smtp"
    smtp_row = sent_by("smtp", "shared-id")
    assert (
        post("/webhooks/postmark/tracking/", complaint("shared-id", smtp_row.contact_email)).status_code
        == 200
    )
    smtp_row.refresh_from_db()
    assert smtp_row.status == "sent"
    assert not BlockedEmail.objects.filter(organization=org).exists()

    postmark_row = sent_by("postmark", "pm-1")
    assert post("/webhooks/postmark/tracking/", complaint("pm-1")).status_code == 200
    postmark_row.refresh_from_db()
    assert postmark_row.status == "complained"


@pytest.mark.django_db
def test_an_outcome_unknown_row_matches_only_the_configured_provider(settings, make_campaign_send):
    from delivery.models import EmailSend
    from delivery.webhooks import find_send_of_provider

    row = make_campaign_send()
    EmailSend.objects.filter(pk=row.pk).update(message_id="<own-id@acme.test>")  # handed off, no result
    settings.EMAIL_PROVIDER = "sendgrid"
    assert find_send_of_provider("<own-id@acme.test>", "postmark") is None
    settings.EMAIL_PROVIDER = "postmark"
    assert find_send_of_provider("own-id@acme.test", "postmark") == SendRef.of(row)


MALFORMED = [
    b"not json",
    b"",
    b"[]",
    b"[1, 2]",
    b'"string"',
    b'{"RecordType": 5}',
    b'{"RecordType": "Bounce", "MessageID": {"x": 1}}',
    b'{"RecordType": "Delivery", "MessageID": "a", "DeliveredAt": "not a date"}',
    b"\xff\xfe\x00",
    b'{"RecordType": "Delivery", "MessageID": "a\\u0000b", "DeliveredAt": "2026-01-01T10:00:00Z"}',
    b'{"RecordType": "Delivery", "MessageID": "\\ud800", "DeliveredAt": "2026-01-01T10:00:00Z"}',
    b"[" * 5000 + b"]" * 5000,
]


@pytest.mark.django_db
@pytest.mark.parametrize("body", MALFORMED)
@pytest.mark.parametrize("slug", SLUGS)
def test_malformed_bodies_answer_4xx_never_500(settings, slug, body):
    settings.ANYMAIL = {
        "WEBHOOK_SECRET": "u:p",
        "MAILGUN_WEBHOOK_SIGNING_KEY": "key-1",
        "MANDRILL_WEBHOOK_KEY": "mk-1",
        "RESEND_SIGNING_SECRET": "whsec_" + base64.b64encode(b"0123456789abcdef").decode(),
        "SENDGRID_TRACKING_WEBHOOK_VERIFICATION_KEY": None,
    }
    response = post(f"/webhooks/{slug}/tracking/", body)
    assert response.status_code < 500, (slug, body[:40], response.status_code)


@pytest.mark.django_db
@pytest.mark.parametrize(
    "content_type", ["application/x-www-form-urlencoded", "text/plain", "multipart/form-data"]
)
def test_form_and_other_content_types_answer_4xx(settings, content_type):
    settings.ANYMAIL = {
        "WEBHOOK_SECRET": "u:p",
        "MAILGUN_WEBHOOK_SIGNING_KEY": "key-1",
        "MANDRILL_WEBHOOK_KEY": "k",
    }
    for slug in SLUGS:
        response = post(f"/webhooks/{slug}/tracking/", "a=%00&mandrill_events=[{", content_type=content_type)
        assert response.status_code < 500, (slug, response.status_code)


@pytest.mark.django_db
def test_bad_signature_answers_400(settings, sent_by):
    settings.ANYMAIL = {"WEBHOOK_SECRET": "u:p", "MAILGUN_WEBHOOK_SIGNING_KEY": "key-1"}
    send = sent_by("postmark")
    assert post("/webhooks/postmark/tracking/", complaint(), auth=None).status_code == 400
    forged = {
        "signature": {"timestamp": "1700000000", "token": "t", "signature": "00"},
        "event-data": {"event": "complained", "message": {"headers": {"message-id": "pm-abc"}}},
    }
    assert post("/webhooks/mailgun/tracking/", forged).status_code == 400
    send.refresh_from_db()
    assert send.status == "sent"
