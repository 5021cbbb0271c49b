"""VERP return paths and the bounce intake (issue 11 item 3, DLV-12): real-world-shaped DSNs, non-standard
bounces, ARF complaints, auto-replies and challenge-response messages, delivered over SMTP to the intake
server (aiosmtpd on loopback) and applied through the send lifecycle."""

from __future__ import annotations

import smtplib
import uuid
from pathlib import Path

import pytest

from delivery import verp
from delivery.bounces.intake import bounce_intake, recipient_accepted
from delivery.bounces.parse import bounce_classify
from delivery.lifecycle import SendRef, send_transition
from delivery.models import TransactionalSend
from owlat.models import BlockedEmail, Contact
from testsupport.waiting import free_port

SAMPLES = Path(__file__).parent / "bounce_samples"
BOUNCE_DOMAIN = "bounce-intake.owlat.test"  # the installation's bounce MX host
RETURN_PATH = "bounces.acme.test"  # the sending domain's return-path domain (a CNAME of BOUNCE_DOMAIN)


def sample(name: str, *, verp_address: str, rcpt: str, message_id: str = "<none@acme.test>") -> bytes:
    text = (SAMPLES / f"{name}.eml").read_text()
    text = text.replace("{verp}", verp_address).replace("{rcpt}", rcpt).replace("{message_id}", message_id)
    return text.replace("\n", "\r\n").encode()


@pytest.fixture
def bounce_settings(settings):
    settings.BOUNCE_DOMAIN = BOUNCE_DOMAIN
    return settings


@pytest.fixture
def sent(make_tx_send, bounce_settings):
    """A sent transactional row and its VERP address."""
    send = make_tx_send()
    message_id = f"<{send.pk.hex}.transactional@acme.test>"
    TransactionalSend.objects.filter(pk=send.pk).update(message_id=message_id)
    assert send_transition(SendRef.of(send), "sent", {"provider_message_id": message_id.strip("<>")}).ok
    send.refresh_from_db()
    return send, verp.verp_address("transactional", send.pk, send.from_email), message_id


# --- VERP -----------------------------------------------------------------------------------------------


def test_verp_round_trip_within_rfc5321_local_part(bounce_settings):
    send_id = uuid.uuid4()
    address = verp.verp_address("campaign", send_id, "news@acme.test")
    local, _, domain = address.partition("@")
    assert domain == RETURN_PATH  # aligned with the From domain (SPF for DMARC)
    assert verp.verp_address("campaign", send_id, None).endswith("@" + BOUNCE_DOMAIN)
    assert len(local.encode()) <= 64
    assert verp.parse_verp(address) == ("campaign", str(send_id))
    assert verp.parse_verp(address.upper()) == ("campaign", str(send_id))  # relays may fold case


def test_forged_or_altered_verp_address_resolves_to_nothing(bounce_settings, settings):
    address = verp.verp_address("transactional", uuid.uuid4())
    local = address.partition("@")[0]
    other_id = verp.verp_local_part("transactional", uuid.uuid4())
    spliced = local[: len(local) - 16] + other_id[-16:]  # a genuine signature of another row
    flipped = local[:5] + ("a" if local[5] != "a" else "b") + local[6:]
    assert verp.parse_verp(f"{spliced}@{BOUNCE_DOMAIN}") is None
    assert verp.parse_verp(f"{flipped}@{BOUNCE_DOMAIN}") is None
    settings.SECRET_KEY = "another-key-" + "x" * 50
    assert verp.parse_verp(address) is None


def test_verp_still_resolves_after_key_rotation(bounce_settings, settings):
    send_id = uuid.uuid4()
    address = verp.verp_address("campaign", send_id)
    settings.SECRET_KEY_FALLBACKS = [settings.SECRET_KEY]
    settings.SECRET_KEY = "rotated-key-" + "y" * 50
    assert verp.parse_verp(address) == ("campaign", str(send_id))


def test_no_bounce_domain_means_no_verp(settings):
    settings.BOUNCE_DOMAIN = ""
    assert verp.verp_address("campaign", uuid.uuid4(), "news@acme.test") is None


def test_composed_message_carries_verp_envelope_sender(sent):
    from delivery.compose import compose_transactional

    send, address, _ = sent
    message = compose_transactional(send)
    assert message.envelope_from == address
    assert address.endswith("@" + RETURN_PATH)
    assert message.from_email == "news@acme.test"


# --- classification --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "kind", "status"),
    [
        ("hard_postfix_dsn", "hard", "5.1.1"),
        ("soft_expired_dsn", "soft", "4.4.1"),
        ("mailbox_full_gmail", "soft", "5.2.2"),
        ("delayed_warning_dsn", "delayed", "4.4.1"),
        ("exim_nonstandard", "hard", "5.1.1"),
        ("qmail_nonstandard", "hard", "5.1.1"),
        ("arf_complaint", "complaint", None),
        ("out_of_office_exchange", "auto_reply", None),
        ("out_of_office_vacation", "auto_reply", None),
        ("challenge_response", "auto_reply", None),
    ],
)
def test_samples_are_classified(name, kind, status):
    report = bounce_classify(sample(name, verp_address="b-x@b.test", rcpt="jane@example.com"))
    assert report.kind == kind
    assert report.status == status
    if kind in ("hard", "soft", "complaint"):
        assert "jane@example.com" in report.recipients


# --- intake → send lifecycle (DLV-12) -----------------------------------------------------------------------


@pytest.mark.parametrize("name", ["hard_postfix_dsn", "exim_nonstandard", "qmail_nonstandard"])
def test_hard_bounce_bounces_the_send_and_suppresses(sent, name):
    send, address, message_id = sent
    [result] = bounce_intake(
        rcpt_tos=[address], raw=sample(name, verp_address=address, rcpt=send.email, message_id=message_id)
    )
    assert result.outcome == "applied"
    send.refresh_from_db()
    assert (send.status, send.bounce_type) == ("bounced", "hard")
    blocked = BlockedEmail.objects.get(organization_id=send.organization_id, email=send.email)
    assert (blocked.reason, blocked.bounce_type) == ("bounced", "hard")
    # the same report again changes nothing
    [again] = bounce_intake(
        rcpt_tos=[address], raw=sample(name, verp_address=address, rcpt=send.email, message_id=message_id)
    )
    assert again.outcome == "duplicate"
    assert BlockedEmail.objects.filter(organization_id=send.organization_id).count() == 1


@pytest.mark.parametrize("name", ["soft_expired_dsn", "mailbox_full_gmail"])
def test_soft_bounce_is_counted_not_suppressed(sent, name):
    send, address, message_id = sent
    raw = sample(name, verp_address=address, rcpt=send.email, message_id=message_id)
    [result] = bounce_intake(rcpt_tos=[address], raw=raw)
    assert result.outcome == "applied"
    send.refresh_from_db()
    assert (send.status, send.bounce_type) == ("bounced", "soft")
    assert Contact.objects.get(pk=send.contact_id).soft_bounce_count == 1
    assert not BlockedEmail.objects.filter(organization_id=send.organization_id).exists()
    bounce_intake(rcpt_tos=[address], raw=raw)  # counted once per send (DLV-12)
    assert Contact.objects.get(pk=send.contact_id).soft_bounce_count == 1


@pytest.mark.parametrize(
    "name", ["out_of_office_exchange", "out_of_office_vacation", "challenge_response", "delayed_warning_dsn"]
)
def test_auto_replies_challenges_and_delay_warnings_are_ignored(sent, name):
    send, address, message_id = sent
    [result] = bounce_intake(
        rcpt_tos=[address], raw=sample(name, verp_address=address, rcpt=send.email, message_id=message_id)
    )
    assert result.outcome == "ignored"
    send.refresh_from_db()
    assert send.status == "sent"
    assert Contact.objects.get(pk=send.contact_id).soft_bounce_count == 0
    assert not BlockedEmail.objects.filter(organization_id=send.organization_id).exists()


def test_arf_complaint_to_verp_marks_complained_and_suppresses(sent):
    send, address, message_id = sent
    [result] = bounce_intake(
        rcpt_tos=[address],
        raw=sample("arf_complaint", verp_address=address, rcpt=send.email, message_id=message_id),
    )
    assert result.outcome == "applied"
    send.refresh_from_db()
    assert send.status == "complained"
    assert (
        BlockedEmail.objects.get(organization_id=send.organization_id, email=send.email).reason
        == "complained"
    )


def test_arf_complaint_to_feedback_address_finds_the_send_from_the_quoted_message(sent):
    send, address, message_id = sent
    raw = sample("arf_complaint", verp_address=address, rcpt=send.email, message_id=message_id)
    [result] = bounce_intake(rcpt_tos=[f"fbl@{RETURN_PATH}"], raw=raw)
    assert result.outcome == "applied"
    send.refresh_from_db()
    assert send.status == "complained"


def test_forged_verp_address_is_ignored(sent):
    send, address, message_id = sent
    forged = verp.verp_local_part("transactional", send.pk)[:-16] + "a" * 16 + f"@{BOUNCE_DOMAIN}"
    [result] = bounce_intake(
        rcpt_tos=[forged],
        raw=sample("hard_postfix_dsn", verp_address=forged, rcpt=send.email, message_id=message_id),
    )
    assert result.outcome == "forged"
    send.refresh_from_db()
    assert send.status == "sent"
    assert not BlockedEmail.objects.filter(organization_id=send.organization_id).exists()
    assert not recipient_accepted(forged)
    assert recipient_accepted(address)


# --- the SMTP/LMTP server ---------------------------------------------------------------------------------


@pytest.fixture
def bounce_server(transactional_db):
    from delivery.bounces.server import BounceServer

    servers = []

    def start(*, lmtp: bool = False):
        server = BounceServer(host="127.0.0.1", port=free_port(), lmtp=lmtp)
        server.start()
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.stop()


def test_bounce_that_overtakes_the_sent_record_is_retried_later(make_tx_send, bounce_settings):
    send = make_tx_send()  # handed to the server, its acceptance not recorded yet: still queued
    address = verp.verp_address("transactional", send.pk, send.from_email)
    raw = sample("hard_postfix_dsn", verp_address=address, rcpt=send.email)
    [result] = bounce_intake(rcpt_tos=[address], raw=raw)
    assert result.outcome == "retry_later"
    send.refresh_from_db()
    assert send.status == "queued"
    assert send_transition(SendRef.of(send), "sent", {}).ok
    [result] = bounce_intake(rcpt_tos=[address], raw=raw)  # the MTA's next attempt
    assert result.outcome == "applied"


@pytest.mark.django_db(transaction=True)
def test_bounce_over_smtp_suppresses_and_forged_rcpt_is_refused(sent, bounce_server, make_tx_send):
    send, address, message_id = sent
    server = bounce_server()
    early = make_tx_send()
    early_address = verp.verp_address("transactional", early.pk, early.from_email)
    with smtplib.SMTP("127.0.0.1", server.port, timeout=10) as client:
        raw = sample("hard_postfix_dsn", verp_address=early_address, rcpt=early.email)
        with pytest.raises(smtplib.SMTPDataError) as refused:
            client.sendmail("", [early_address], raw)
        assert refused.value.smtp_code == 451
    raw = sample("hard_postfix_dsn", verp_address=address, rcpt=send.email, message_id=message_id)
    forged = verp.verp_local_part("transactional", send.pk)[:-16] + "b" * 16 + f"@{BOUNCE_DOMAIN}"
    with smtplib.SMTP("127.0.0.1", server.port, timeout=10) as client:
        with pytest.raises(smtplib.SMTPRecipientsRefused):
            client.sendmail("", [forged], raw)
        client.sendmail("", [address], raw)
    send.refresh_from_db()
    assert (send.status, send.bounce_type) == ("bounced", "hard")
    assert BlockedEmail.objects.filter(organization_id=send.organization_id, email=send.email).exists()


@pytest.mark.django_db(transaction=True)
def test_arf_over_lmtp_marks_complained(sent, bounce_server):
    send, address, message_id = sent
    server = bounce_server(lmtp=True)
    raw = sample("arf_complaint", verp_address=address, rcpt=send.email, message_id=message_id)
    with smtplib.LMTP("127.0.0.1", server.port, timeout=10) as client:
        refused = client.sendmail("", [address], raw)
    assert refused == {}
    send.refresh_from_db()
    assert send.status == "complained"


def test_run_bounce_server_refuses_a_bad_port():
    import subprocess
    import sys

    from testsupport import BASE_DIR
    from testsupport.workers import worker_environment

    proc = subprocess.run(
        [sys.executable, "manage.py", "run_bounce_server", "--port", "99999"],
        cwd=BASE_DIR,
        env=worker_environment(),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode != 0
    assert "not a port number" in proc.stderr


def test_campaign_send_bounce_counts_on_the_campaign(make_campaign_send, bounce_settings):
    from delivery.compose import compose_campaign
    from delivery.models import CampaignSendCounters, CampaignSendSettings

    send = make_campaign_send()
    message = compose_campaign(send, CampaignSendSettings.objects.get(campaign_id=send.campaign_id))
    address = message.envelope_from
    assert address.endswith("@" + RETURN_PATH)
    assert verp.parse_verp(address) == ("campaign", str(send.pk))
    assert send_transition(SendRef.of(send), "sent", {}).ok
    [result] = bounce_intake(
        rcpt_tos=[address], raw=sample("qmail_nonstandard", verp_address=address, rcpt=send.contact_email)
    )
    assert result.outcome == "applied"
    send.refresh_from_db()
    assert (send.status, send.bounce_type) == ("bounced", "hard")
    counters = CampaignSendCounters.objects.get(campaign_id=send.campaign_id)
    assert (counters.bounced, counters.hard_bounced) == (1, 1)
    assert BlockedEmail.objects.filter(email=send.contact_email).exists()


def test_malformed_messages_are_read_or_ignored_never_raise():
    raw = sample("hard_postfix_dsn", verp_address="b-x@b.test", rcpt="jane@example.com")
    mangled = raw.replace(b"Subject: Undelivered", b"Subject: \xff\xfe Undelivered").replace(
        b"Action: failed", b"Action: failed \xe9"
    )
    assert bounce_classify(mangled).kind == "hard"
    for garbage in (b"", b"\x00\xff\xfe", b"Content-Type: multipart/report; boundary=\r\n\r\n--\r\n"):
        assert bounce_classify(garbage).kind == "not_a_bounce"
