"""Bounces as an operator sees them: blocks from one receiving domain raise the dashboard's deliverability alert
(the addresses stay unsuppressed), a hard bounce shows its reason and diagnostic on the suppression list and the
contact page, and the operator lifts it after a confirmation naming the consequences (an audit row)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.browser.conftest import login, screenshot

pytestmark = pytest.mark.django_db(transaction=True)
CORPUS = Path(__file__).resolve().parents[1] / "bounce_corpus" / "mails"
CORPUS_RCPT = {"018": "k.tanaka", "084": "p.nguyen"}


def _sent(org, email: str):
    from delivery import verp
    from delivery.lifecycle import SendRef, send_transition
    from delivery.models import TransactionalSend
    from owlat.models import Contact

    contact, _ = Contact.objects.get_or_create(organization=org, email=email)
    send = TransactionalSend.objects.create(
        organization=org, kind="transactional", contact=contact, email=email, from_email="hello@acme.test"
    )
    assert send_transition(SendRef.of(send), "sent", {}).ok
    return send, verp.verp_address("transactional", send.pk, send.from_email), contact


def _bounce(org, email: str, prefix: str) -> object:
    """A corpus mail, its recipient replaced by `email`, received by the intake for a new sent row."""
    import json

    from delivery.bounces.intake import bounce_intake

    manifest = json.loads((CORPUS.parent / "manifest.json").read_text())
    entry = next(e for e in manifest if e["file"].startswith(prefix))
    send, address, contact = _sent(org, email)
    raw = (CORPUS / entry["file"]).read_bytes().replace(entry["recipients"][0].encode(), email.encode())
    [result] = bounce_intake(rcpt_tos=[address], raw=raw)
    assert result.outcome == "applied", result
    return contact


def test_blocks_raise_the_alert_and_a_hard_bounce_is_lifted_with_an_audit_row(
    page, live_server, operator, settings
):
    from owlat.models import AuditLog, BlockedEmail

    settings.BOUNCE_DOMAIN = "bounce-intake.owlat.test"
    settings.DELIVERABILITY_ALERT_THRESHOLD = 3
    org = operator["org"]
    for i in range(4):
        _bounce(org, f"reader{i}@outlook.com", "018-office365-blocked")
    ghost = _bounce(org, "ghost@example.com", "084-office365_prose-user_unknown")
    assert not BlockedEmail.objects.filter(organization=org, email__endswith="@outlook.com").exists()

    login(page, live_server)
    page.goto(f"{live_server.url}/admin/")
    attention = page.inner_text("#owlat-attention")
    assert "4 blocks from outlook.com (Microsoft) in the last 60 minutes" in attention
    assert "S3140" in attention and "not suppressed" in attention
    screenshot(page, "60-dashboard-deliverability-alert")

    page.click("text=4 blocks from outlook.com")
    page.wait_for_load_state()
    listing = page.inner_text("body")
    assert "reader0@outlook.com" in listing and "blocked (sender IP or domain reputation)" in listing
    assert "ghost@example.com" not in listing  # the link filters on blocks from that domain
    screenshot(page, "61-received-bounces-blocks")

    page.goto(f"{live_server.url}/admin/owlat/contact/{ghost.pk}/change/")
    contact_page = page.inner_text("body")
    assert "Bounces received" in contact_page and "RecipientNotFound" in contact_page
    screenshot(page, "62-contact-bounces-received")

    page.goto(f"{live_server.url}/admin/owlat/blockedemail/")
    suppression = page.inner_text("body")
    assert "ghost@example.com" in suppression and "[user_unknown] 5.1.10" in suppression
    screenshot(page, "63-suppression-list-why")
    page.click("text=Lift…")
    page.wait_for_load_state()
    confirm = page.inner_text("body")
    assert "sent to this address again" in confirm and "RecipientNotFound" in confirm
    screenshot(page, "64-lift-suppression-confirm")
    page.fill("#id_note", "the customer says the mailbox exists again")
    page.click("[data-testid=lift-confirm]")
    page.wait_for_load_state()
    assert "was lifted" in page.inner_text("body")
    screenshot(page, "65-suppression-lifted")
    assert not BlockedEmail.objects.filter(organization=org, email="ghost@example.com").exists()
    audit = AuditLog.objects.get(organization=org, action="suppression_lifted")
    assert audit.user_id == str(operator["user"].pk) and audit.resource == "blocked_email"
    assert audit.details["reason"] == "bounced" and "mailbox exists again" in audit.details["note"]
