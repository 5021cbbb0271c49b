"""Suppression by bounce reason: hard reasons suppress at once, soft ones within a window, blocks never; every
received report is kept as a `BounceRecord`; the defect classes of the old intake each have a test here (the
corpus, tests/test_bounce_corpus.py, covers the formats)."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest
from django.utils import timezone

from delivery import verp
from delivery.bounces.intake import bounce_intake
from delivery.bounces.parse import bounce_classify
from delivery.bounces.records import deliverability_alerts
from delivery.lifecycle import SendRef, send_transition
from delivery.models import BounceRecord, TransactionalSend
from owlat.models import BlockedEmail, Contact

CORPUS = Path(__file__).resolve().parents[2] / "tests" / "bounce_corpus"
MANIFEST = {e["file"]: e for e in json.loads((CORPUS / "manifest.json").read_text())}
BOUNCE_DOMAIN = "bounce-intake.owlat.test"


def corpus(name: str, *, to: str | None = None, rcpt: str | None = None) -> bytes:
    """A corpus mail, its failed recipient replaced by `to` (the send row's address)."""
    file = next(f for f in MANIFEST if f.startswith(name))
    raw = (CORPUS / "mails" / file).read_bytes()
    if to is not None and MANIFEST[file]["recipients"]:
        raw = raw.replace(MANIFEST[file]["recipients"][0].encode(), to.encode())
    if rcpt is not None:
        raw = raw.replace(b"b-tq3ah7xk2m4r5s6t7u8v9w0y1zab2cdef3ghij4kl@bounces.acme.test", rcpt.encode())
    return raw


@pytest.fixture
def sent_row(make_tx_send, settings):
    settings.BOUNCE_DOMAIN = BOUNCE_DOMAIN

    def make(contact=None):
        send = make_tx_send(contact=contact)
        assert send_transition(SendRef.of(send), "sent", {}).ok
        send.refresh_from_db()
        return send, verp.verp_address("transactional", send.pk, send.from_email)

    return make


def _intake(send, address, name):
    [result] = bounce_intake(rcpt_tos=[address], raw=corpus(name, to=send.email, rcpt=address))
    send.refresh_from_db()
    return result


@pytest.mark.parametrize(
    "name", ["004-postfix-blocked", "005-postfix-policy", "029-gmail-spam_content", "018-office365-blocked"]
)
def test_a_block_never_suppresses_and_is_recorded_with_its_diagnostic(sent_row, name):
    send, address = sent_row()
    result = _intake(send, address, name)
    assert (result.outcome, result.kind) == ("applied", "block")
    assert (send.status, send.bounce_type) == ("bounced", "soft")
    assert not BlockedEmail.objects.filter(organization_id=send.organization_id).exists()
    assert Contact.objects.get(pk=send.contact_id).soft_bounce_count == 0  # blocks do not count
    record = BounceRecord.objects.get(send_id=send.pk)
    assert (record.kind, record.email, record.suppressed) == ("block", send.email, False)
    assert record.reason == MANIFEST[next(f for f in MANIFEST if f.startswith(name))]["reason"]
    assert record.status.startswith("5.7") and record.diagnostic


def test_hard_reason_suppresses_at_once_and_records_why(sent_row):
    send, address = sent_row()
    assert _intake(send, address, "084-office365_prose-user_unknown").outcome == "applied"
    assert (send.status, send.bounce_type) == ("bounced", "hard")
    assert "[user_unknown] 5.1.10" in send.error_message
    blocked = BlockedEmail.objects.get(organization_id=send.organization_id, email=send.email)
    assert (blocked.reason, blocked.bounce_type) == ("bounced", "hard")
    record = BounceRecord.objects.get(send_id=send.pk)
    assert (record.reason, record.status, record.suppressed) == ("user_unknown", "5.1.10", True)


def test_soft_bounces_suppress_only_at_the_threshold_within_the_window(sent_row, make_contact, settings):
    settings.BOUNCE_SOFT_THRESHOLD = 3
    settings.BOUNCE_SOFT_WINDOW_DAYS = 10
    contact = make_contact(email="full@example.com")
    rows = [sent_row(contact) for _ in range(4)]
    # two old soft bounces fall outside the window
    for send, address in rows[:2]:
        assert _intake(send, address, "003-postfix-mailbox_full").outcome == "applied"
    TransactionalSend.objects.filter(pk__in=[s.pk for s, _ in rows[:2]]).update(
        bounced_at=timezone.now() - dt.timedelta(days=20)
    )
    send, address = rows[2]
    assert _intake(send, address, "003-postfix-mailbox_full").outcome == "applied"
    assert Contact.objects.get(pk=contact.pk).soft_bounce_count == 3
    assert not BlockedEmail.objects.filter(email=contact.email).exists()  # 1 within the window
    settings.BOUNCE_SOFT_WINDOW_DAYS = 30
    send, address = rows[3]
    assert _intake(send, address, "125-appliance-action-expired").outcome == "applied"
    blocked = BlockedEmail.objects.get(email=contact.email)
    assert (blocked.reason, blocked.bounce_type) == ("bounced", "soft")


def test_blocks_between_soft_bounces_do_not_count(sent_row, make_contact, settings):
    settings.BOUNCE_SOFT_THRESHOLD = 2
    contact = make_contact(email="fine@example.com")
    for name in ("004-postfix-blocked", "022-outlook_com-blocked", "003-postfix-mailbox_full"):
        send, address = sent_row(contact)
        _intake(send, address, name)
    assert not BlockedEmail.objects.filter(email=contact.email).exists()


@pytest.mark.parametrize("name", ["116-postfix-delayed", "121-postfix_prose-delayed", "147-exchange_oof"])
def test_delays_and_auto_replies_are_recorded_never_counted(sent_row, name):
    send, address = sent_row()
    result = _intake(send, address, name)
    assert result.outcome == "ignored"
    assert send.status == "sent"
    assert BounceRecord.objects.get(send_id=send.pk).kind in ("delayed", "auto_reply")
    assert not BlockedEmail.objects.exists()


@pytest.mark.parametrize("row_gets", ["block", "hard"])
def test_multi_recipient_report_is_matched_per_row(sent_row, row_gets):
    """One report: a block for one recipient, user unknown for the other; each row gets its own entry."""
    send, address = sent_row()
    raw = corpus("127-appliance-multi-recipient-mixed", rcpt=address)
    report = bounce_classify(raw)
    assert report.kind == "hard"  # the report's own kind is not what a row gets
    mine = next(e.address for e in report.entries if e.kind == row_gets)
    [result] = bounce_intake(rcpt_tos=[address], raw=raw.replace(mine.encode(), send.email.encode()))
    send.refresh_from_db()
    assert result.kind == row_gets
    assert BlockedEmail.objects.filter(email=send.email).exists() == (row_gets == "hard")


def test_dashboard_alert_counts_blocks_per_receiving_domain(sent_row, make_contact, settings, org):
    settings.DELIVERABILITY_ALERT_THRESHOLD = 3
    settings.DELIVERABILITY_ALERT_WINDOW_MINUTES = 60
    for i in range(3):
        send, address = sent_row(make_contact(email=f"user{i}@outlook.com"))
        _intake(send, address, "018-office365-blocked")
    send, address = sent_row(make_contact(email="other@example.org"))
    _intake(send, address, "004-postfix-blocked")
    [alert] = deliverability_alerts(organization_id=org.pk)
    assert (alert.recipient_domain, alert.provider, alert.blocks) == ("outlook.com", "Microsoft", 3)
    assert "S3140" in alert.last_diagnostic
    assert alert.message.startswith("3 blocks from outlook.com (Microsoft) in the last 60 minutes")
    BounceRecord.objects.update(received_at=timezone.now() - dt.timedelta(hours=2))
    assert deliverability_alerts(organization_id=org.pk) == []


# --- the old intake's defect classes -----------------------------------------------------------------------

PROSE_WARNING = (
    b"From: MAILER-DAEMON@mail.example.net\r\nTo: b-x@bounces.acme.test\r\nSubject: Warning: could not send "
    b"message for past 4 hours\r\n\r\n    **  THIS IS A WARNING MESSAGE ONLY  **\r\n\r\n<jane@example.com>... "
    b"Deferred: Connection timed out\r\nWill keep trying until message is 5 days old\r\n"
)


def test_defect_1_delay_warnings_are_not_bounces():
    assert bounce_classify(PROSE_WARNING).kind == "delayed"
    assert bounce_classify(corpus("121-postfix_prose-delayed")).kind == "delayed"  # no MIME structure
    assert bounce_classify(corpus("120-exim-delayed")).kind == "delayed"


def test_defect_2_prose_bounces_follow_the_soft_rules():
    raw = (
        b"From: MAILER-DAEMON@mail.example.net\r\nTo: b-x@bounces.acme.test\r\nSubject: failure notice\r\n\r\n"
        b"Hi. This is the qmail-send program at mail.example.net.\r\nI'm afraid I wasn't able to deliver your "
        b"message to the following addresses.\r\nThis is a permanent error; I've given up.\r\n\r\n"
        b"<jane@example.com>:\r\nRemote host said: 552 5.2.2 Mailbox full\r\n"
    )
    assert (bounce_classify(raw).kind, bounce_classify(raw).reason) == ("soft", "mailbox_full")
    raw = raw.replace(b"552 5.2.2 Mailbox full", b"#4.4.1 connection timed out, not going to try again")
    assert (bounce_classify(raw).kind, bounce_classify(raw).reason) == ("soft", "expired")


@pytest.mark.parametrize(
    ("name", "kind"),
    [
        ("123-appliance-unindented-continuation", "hard"),
        ("124-appliance-space-before-colon", "soft"),
        ("125-appliance-action-expired", "soft"),
        ("128-appliance-unreadable-report-prose-fallback", "hard"),
        ("129-amazon_workmail-user_unknown", "hard"),
        ("079-yahoo-user_unknown", "hard"),
        ("084-office365_prose-user_unknown", "hard"),
        ("088-opensmtpd-user_unknown", "hard"),
        ("091-lotus_notes-user_unknown", "hard"),
        ("094-sendmail_v5-user_unknown", "hard"),
        ("098-docomo-user_unknown", "hard"),
        ("138-jmrp-complaint", "complaint"),
    ],
)
def test_defect_3_failures_the_old_intake_missed_are_read(name, kind):
    assert bounce_classify(corpus(name)).kind == kind


@pytest.mark.parametrize(
    "name",
    ["004-postfix-blocked", "028-gmail-policy", "031-gmail-policy", "072-exim-blocked", "082-yahoo-policy"],
)
def test_defect_4_blocks_and_policy_are_not_hard(name):
    assert bounce_classify(corpus(name)).kind == "block"


def test_defect_5_recipients_are_checked_and_kept_per_block():
    raw = (
        b"From: MAILER-DAEMON@mail.example.net\r\nTo: b-x@bounces.acme.test\r\nSubject: Undelivered Mail\r\n\r\n"
        b"Your message <20261130.4F2A8$abc@mail.example.net> could not be delivered to the following recipients:"
        b'\r\n\r\n"|/usr/bin/procmail"@example.net\r\n/var/spool/mail/jane@example.net\r\n<jane@example.com>: '
        b"550 5.1.1 user unknown\r\n"
    )
    report = bounce_classify(raw)
    assert report.recipients == ("jane@example.com",)
    assert set(bounce_classify(corpus("126-appliance-blocks-without-blank-line")).recipients) == set(
        MANIFEST[next(f for f in MANIFEST if f.startswith("126-"))]["recipients"]
    )
    mixed = bounce_classify(corpus("127-appliance-multi-recipient-mixed"))
    assert sorted(e.kind for e in mixed.entries) == ["block", "hard"]
    assert len(bounce_classify(corpus("136-arf_yahoo-two-recipients")).recipients) == 2
    sns = bounce_classify(corpus("140-amazon_sns-user_unknown"))
    assert sns.kind == "hard" and all("{" not in r and '"' not in r for r in sns.recipients)
    assert bounce_classify(corpus("146-amazon_sns-delivery")).kind == "not_a_bounce"


def test_an_operator_lifts_a_suppression_with_an_audit_row(sent_row, org):
    from owlat.models import AuditLog
    from owlat.suppression import is_suppressed, suppression_lift

    send, address = sent_row()
    _intake(send, address, "001-postfix-user_unknown")
    row = BlockedEmail.objects.get(organization=org, email=send.email)
    assert row.notes.startswith("[user_unknown] 5.1.1")  # why, for the suppression list
    Contact.objects.filter(pk=send.contact_id).update(soft_bounce_count=3)
    lifted = suppression_lift(organization_id=org.pk, email=send.email.upper(), actor="7", note="fixed")
    assert lifted is not None and not is_suppressed(organization_id=org.pk, email=send.email)
    assert Contact.objects.get(pk=send.contact_id).soft_bounce_count == 0
    audit = AuditLog.objects.get(organization=org, action="suppression_lifted")
    assert (audit.user_id, audit.details["reason"], audit.details["note"]) == ("7", "bounced", "fixed")
    assert suppression_lift(organization_id=org.pk, email=send.email, actor="7") is None


@pytest.mark.parametrize(
    ("mta_response", "reject_reason", "expected"),
    [
        (
            "550 5.7.1 Service unavailable; client [192.0.2.1] blocked using zen.spamhaus.org",
            "bounced",
            ("soft", False),
        ),
        ("", "blocked", ("soft", False)),
        ("550 5.1.1 user unknown", "bounced", ("hard", True)),
        ("", "bounced", ("hard", True)),  # an ESP's bounce without a diagnostic stays as the ESP said
        ("452 4.2.2 Mailbox full", "bounced", ("soft", True)),
    ],
)
def test_provider_webhook_bounces_that_are_blocks_never_count(mta_response, reject_reason, expected):
    from types import SimpleNamespace

    from delivery.webhooks import classify_bounce_reason

    event = SimpleNamespace(
        mta_response=mta_response, description="", reject_reason=reject_reason, esp_event={}
    )
    assert classify_bounce_reason(event) == expected


def test_a_hostile_diagnostic_is_shown_as_text(client, django_user_model, org, settings):
    """What a remote server wrote reaches the admin escaped: the received-bounce list, the dashboard alert."""
    from django.urls import reverse

    from delivery.bounces.records import bounce_record
    from owlat.models import Membership

    settings.DELIVERABILITY_ALERT_THRESHOLD = 1
    hostile = '550 5.7.1 blocked <script>alert("x")</script><img src=x onerror=alert(1)>'
    bounce_record(
        organization_id=org.pk,
        send_kind="transactional",
        send_id="00000000-0000-0000-0000-0000000000dd",
        contact_id=None,
        email="a@outlook.com",
        kind="block",
        reason="blocked",
        status="5.7.1",
        diagnostic=hostile,
    )
    user = django_user_model.objects.create_user(username="olga", password="pw", is_staff=True)
    Membership.objects.create(user=user, organization=org, role="owner")
    client.force_login(user)
    for url in (reverse("admin:delivery_bouncerecord_changelist"), reverse("admin:index")):
        page = client.get(url).content.decode()
        assert "&lt;script&gt;" in page and "<script>alert" not in page and "<img src=x" not in page, url


def test_mail_to_the_mailto_unsubscribe_address_unsubscribes_the_contact(sent_row, settings):
    from delivery.bounces.intake import recipient_accepted

    send, bounce_address = sent_row()
    address = verp.unsubscribe_address("transactional", send.pk, send.from_email)
    assert address.endswith("@bounces.acme.test") and len(address.partition("@")[0]) <= 64
    assert verp.parse_unsubscribe_address(address.upper()) == ("transactional", str(send.pk))
    # the two kinds of address never stand in for each other, and a forged one is refused at RCPT
    assert verp.parse_verp(address) is None and verp.parse_unsubscribe_address(bounce_address) is None
    local, _, domain = address.partition("@")
    forged = f"{local[:-16]}{'a' * 16}@{domain}"
    assert recipient_accepted(address) and not recipient_accepted(forged)
    raw = (
        b"From: Jane <"
        + send.email.encode()
        + b">\r\nTo: "
        + address.encode()
        + b"\r\nSubject: unsubscribe\r\n\r\n"
    )
    auto = raw.replace(b"Subject: unsubscribe", b"Auto-Submitted: auto-replied\r\nSubject: Out of office")
    [ignored] = bounce_intake(rcpt_tos=[address], raw=auto)
    assert ignored.outcome == "ignored"
    assert Contact.objects.get(pk=send.contact_id).unsubscribed_at is None
    [result] = bounce_intake(rcpt_tos=[address], raw=raw)
    assert result.outcome == "unsubscribed"
    assert Contact.objects.get(pk=send.contact_id).unsubscribed_at is not None
    send.refresh_from_db()
    assert send.status == "sent"  # not a bounce
    [again] = bounce_intake(rcpt_tos=[forged], raw=raw)
    assert again.outcome == "forged"
