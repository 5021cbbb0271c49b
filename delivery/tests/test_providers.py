"""Providers (DLV-22, D-09) and provider webhooks (DLV-19): an ESP end to end over real HTTP against a loopback
stand-in (Postmark through django-anymail with `POSTMARK_API_URL`), anymail tracking webhooks with replays and
signature checks, the `local` provider, the fail-closed provider status and the D-08 SMTP code mapping."""

from __future__ import annotations

import base64
import datetime as dt
import json

import pytest
from django.test import Client

from delivery.lifecycle import SendRef
from delivery.models import LocalMessage
from delivery.providers import (
    parse_email_url,
    provider_status,
    smtp_error_code,
)
from delivery.worker import dispatch_batch
from owlat.models import BlockedEmail


class FakeSleep:
    def __init__(self):
        self.waits = []

    def __call__(self, s):
        self.waits.append(s)


@pytest.fixture
def postmark(settings, http_receiver, monkeypatch):
    settings.EMAIL_PROVIDER = "postmark"
    settings.DELIVERY_TRANSACTIONAL_RATE = 0
    settings.DELIVERY_CAMPAIGN_RATE = 0
    settings.ANYMAIL = {"POSTMARK_SERVER_TOKEN": "server-token", "POSTMARK_API_URL": http_receiver.url + "/"}
    counter = {"n": 0}

    def handler(req):
        from testsupport import Reply

        if req.path != "/email":
            return None
        counter["n"] += 1
        body = req.json()
        return Reply(
            200,
            {
                "To": body["To"],
                "SubmittedAt": "2026-01-01T00:00:00Z",
                "MessageID": f"pm-{counter['n']:04d}",
                "ErrorCode": 0,
                "Message": "OK",
            },
        )

    http_receiver.handler = handler
    return http_receiver


@pytest.mark.django_db
def test_postmark_end_to_end_over_http(postmark, make_tx_send):
    send = make_tx_send(kind="transactional")
    summary = dispatch_batch("transactional", [str(send.pk)])
    assert summary.sent == 1
    [request] = postmark.requests_to("/email")
    assert request.headers["x-postmark-server-token"] == "server-token"
    body = request.json()
    assert body["To"] == send.email and body["Subject"] == "Subject"
    assert body["HtmlBody"] == "<p>Hi</p>" and body["TextBody"] == "Hi"
    headers = {h["Name"]: h["Value"] for h in body.get("Headers", [])}
    send.refresh_from_db()
    assert headers.get("Message-ID") == send.message_id
    assert (send.status, send.provider_type, send.provider_message_id) == ("sent", "postmark", "pm-0001")


@pytest.mark.django_db
def test_postmark_503_twice_then_200_after_the_spec_waits(postmark, make_tx_send):
    from testsupport import Reply

    send = make_tx_send()
    answers = [
        Reply(503, {"ErrorCode": 100, "Message": "down"}),
        Reply(503, {"ErrorCode": 100, "Message": "down"}),
    ]
    original = postmark.handler
    postmark.handler = lambda req: answers.pop(0) if answers else original(req)
    sleep = FakeSleep()
    assert dispatch_batch("transactional", [str(send.pk)], sleep=sleep).retrying == 1
    assert sleep.waits == []  # issue 12 item 5: retries are due tasks, never sleeps in the job
    from testsupport import run_due_retry

    delays = [run_due_retry()[0] for _ in range(2)]
    assert [round(d) for d in delays] == [1, 5]
    assert len(postmark.requests_to("/email")) == 3
    send.refresh_from_db()
    assert send.status == "sent"


@pytest.mark.django_db
def test_postmark_401_is_auth_failed_without_retry(postmark, make_tx_send):
    from testsupport import Reply

    postmark.handler = lambda req: Reply(401, {"ErrorCode": 10, "Message": "bad token"})
    send = make_tx_send()
    sleep = FakeSleep()
    assert dispatch_batch("transactional", [str(send.pk)], sleep=sleep).failed == 1
    assert sleep.waits == []
    send.refresh_from_db()
    assert (send.status, send.error_code) == ("failed", "AUTH_FAILED")


@pytest.mark.django_db
def test_postmark_timeout_after_the_request_is_an_unknown_outcome(postmark, make_tx_send, settings):
    from testsupport import Reply

    settings.ANYMAIL = {**settings.ANYMAIL, "REQUESTS_TIMEOUT": 0.3}
    postmark.handler = lambda req: Reply(200, {"MessageID": "late", "ErrorCode": 0}, delay=1.0)
    send = make_tx_send()
    summary = dispatch_batch("transactional", [str(send.pk)], sleep=FakeSleep())
    assert summary.unknown == 1
    send.refresh_from_db()
    assert send.status == "queued" and send.outcome_unknown and send.error_code == "AMBIGUOUS_TIMEOUT"


# --- tracking webhooks (anymail) --------------------------------------------------------------------------


def _post_postmark(client, payload, auth="u:p"):
    headers = {}
    if auth:
        headers["HTTP_AUTHORIZATION"] = "Basic " + base64.b64encode(auth.encode()).decode()
    return client.post(
        "/webhooks/postmark/tracking/", data=json.dumps(payload), content_type="application/json", **headers
    )


@pytest.fixture
def webhook_secret(settings):
    settings.ANYMAIL = {"WEBHOOK_SECRET": "u:p"}


@pytest.fixture
def sent_campaign_row(make_campaign_send):
    from delivery.lifecycle import send_transition

    send = make_campaign_send()
    send_transition(SendRef.of(send), "sent", {"provider_message_id": "pm-abc", "provider_type": "postmark"})
    return send


@pytest.mark.django_db
def test_delivery_webhook_and_replay(webhook_secret, sent_campaign_row):
    client = Client()
    payload = {
        "RecordType": "Delivery",
        "MessageID": "pm-abc",
        "Recipient": sent_campaign_row.contact_email,
        "DeliveredAt": "2026-01-01T10:00:00Z",
    }
    assert _post_postmark(client, payload).status_code == 200
    sent_campaign_row.refresh_from_db()
    assert sent_campaign_row.status == "delivered"
    assert sent_campaign_row.delivered_at == dt.datetime(2026, 1, 1, 10, 0, tzinfo=dt.UTC)
    # the replay is harmless
    assert _post_postmark(client, payload).status_code == 200
    from delivery.services import campaign_counters

    assert campaign_counters(sent_campaign_row.campaign_id)["delivered"] == 1


@pytest.mark.django_db
def test_bounce_webhooks_hard_and_soft(webhook_secret, make_campaign_send, org):
    from delivery.lifecycle import send_transition

    client = Client()
    hard = make_campaign_send()
    soft = make_campaign_send()
    send_transition(SendRef.of(hard), "sent", {"provider_message_id": "pm-hard", "provider_type": "postmark"})
    send_transition(SendRef.of(soft), "sent", {"provider_message_id": "pm-soft", "provider_type": "postmark"})
    for mid, kind, rcpt in (
        ("pm-hard", "HardBounce", hard.contact_email),
        ("pm-soft", "SoftBounce", soft.contact_email),
    ):
        payload = {
            "RecordType": "Bounce",
            "Type": kind,
            "TypeCode": 1 if kind == "HardBounce" else 4096,
            "MessageID": mid,
            "Email": rcpt,
            "BouncedAt": "2026-01-01T10:00:00Z",
            "Description": "The server was unable to deliver your message",
        }
        assert _post_postmark(client, payload).status_code == 200
    hard.refresh_from_db()
    soft.refresh_from_db()
    assert (hard.status, hard.bounce_type) == ("bounced", "hard")
    assert (soft.status, soft.bounce_type) == ("bounced", "soft")
    assert BlockedEmail.objects.filter(organization=org, email=hard.contact_email, reason="bounced").exists()
    assert not BlockedEmail.objects.filter(organization=org, email=soft.contact_email).exists()


@pytest.mark.django_db
def test_complaint_webhook_and_unknown_ids_are_acknowledged(webhook_secret, sent_campaign_row, org):
    client = Client()
    payload = {
        "RecordType": "SpamComplaint",
        "MessageID": "pm-abc",
        "Email": sent_campaign_row.contact_email,
        "BouncedAt": "2026-01-01T10:00:00Z",
        "Type": "SpamComplaint",
        "TypeCode": 512,
    }
    assert _post_postmark(client, payload).status_code == 200
    sent_campaign_row.refresh_from_db()
    assert sent_campaign_row.status == "complained"
    assert (
        BlockedEmail.objects.get(organization=org, email=sent_campaign_row.contact_email).reason
        == "complained"
    )
    unknown = {**payload, "MessageID": "does-not-exist"}
    assert _post_postmark(client, unknown).status_code == 200


@pytest.mark.django_db
def test_webhook_with_bad_credentials_is_refused_by_anymail(webhook_secret, sent_campaign_row):
    payload = {"RecordType": "Delivery", "MessageID": "pm-abc", "DeliveredAt": "2026-01-01T10:00:00Z"}
    response = _post_postmark(Client(), payload, auth="u:wrong")
    assert response.status_code in (400, 401, 403)
    sent_campaign_row.refresh_from_db()
    assert sent_campaign_row.status == "sent"


@pytest.mark.django_db
def test_open_and_click_webhooks(webhook_secret, sent_campaign_row):
    client = Client()
    base = {
        "MessageID": "pm-abc",
        "Recipient": sent_campaign_row.contact_email,
        "ReceivedAt": "2026-01-01T10:00:00Z",
    }
    assert _post_postmark(client, {**base, "RecordType": "Open", "FirstOpen": True}).status_code == 200
    assert (
        _post_postmark(
            client, {**base, "RecordType": "Click", "OriginalLink": "https://example.org/x"}
        ).status_code
        == 200
    )
    sent_campaign_row.refresh_from_db()
    assert sent_campaign_row.status == "clicked" and sent_campaign_row.open_count == 1
    assert sent_campaign_row.clicked_links[0]["url"] == "https://example.org/x"


# --- local provider, status, SMTP mapping -----------------------------------------------------------------


@pytest.mark.django_db
def test_local_provider_stores_each_message(settings, make_tx_send):
    settings.EMAIL_PROVIDER = "local"
    settings.DELIVERY_TRANSACTIONAL_RATE = 0
    send = make_tx_send()
    assert dispatch_batch("transactional", [str(send.pk)]).sent == 1
    stored = LocalMessage.objects.get()
    assert stored.to == send.email and stored.subject == "Subject" and stored.html == "<p>Hi</p>"
    assert "Message-ID" in stored.raw and stored.send_id == send.pk
    send.refresh_from_db()
    assert send.status == "sent" and send.provider_type == "local"


def test_provider_status_fails_closed(settings, monkeypatch):
    settings.EMAIL_PROVIDER = ""
    assert provider_status()["configured"] is False
    settings.EMAIL_PROVIDER = "smtp"
    settings.EMAIL_URL = ""
    assert provider_status()["configured"] is False
    settings.EMAIL_URL = "smtp+tls://user:p%40ss@mail.example.org:2587"
    status = provider_status()
    assert status["configured"] and status["host"] == "mail.example.org" and status["tls"] is True
    settings.EMAIL_PROVIDER = "resend"
    settings.ANYMAIL = {}
    monkeypatch.delenv("RESEND_API_KEY", raising=False)
    assert provider_status() == {
        "provider": "resend",
        "configured": False,
        "problem": "Missing RESEND_API_KEY",
    }
    monkeypatch.setenv("RESEND_API_KEY", "re_123")
    assert provider_status()["configured"] is True
    settings.EMAIL_PROVIDER = "carrier-pigeon"
    assert provider_status()["configured"] is False


def test_email_url_forms():
    cfg = parse_email_url("smtp+ssl://a%40b.test:secret@smtp.example.org")
    assert (cfg.host, cfg.port, cfg.username, cfg.password, cfg.use_ssl) == (
        "smtp.example.org",
        465,
        "a@b.test",
        "secret",
        True,
    )
    assert parse_email_url("smtp://127.0.0.1:2525").port == 2525
    assert parse_email_url("consolemail://") is None


@pytest.mark.parametrize(
    ("code", "expected"),
    [
        (421, "RATE_LIMIT"),
        (450, "RATE_LIMIT"),
        (451, "RATE_LIMIT"),
        (452, "RATE_LIMIT"),
        (454, "SERVER_ERROR"),
        (550, "INVALID_RECIPIENT"),
        (551, "INVALID_RECIPIENT"),
        (553, "INVALID_RECIPIENT"),
        (552, "CONTENT_REJECTED"),
        (554, "CONTENT_REJECTED"),
        (530, "AUTH_FAILED"),
        (535, "AUTH_FAILED"),
        (500, "UNKNOWN"),
    ],
)
def test_d08_smtp_reply_mapping(code, expected):
    assert smtp_error_code(code) == expected
