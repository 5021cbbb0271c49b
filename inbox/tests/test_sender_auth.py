"""Sender authentication by DMARC alignment (inbox.sender_auth): the MTA's trusted results count only for the
From domain they vouch for, and without them the message's own DKIM signature is verified with dkimpy against
the key in DNS (the loopback stand-in)."""

from __future__ import annotations

import base64

import dkim
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from inbox.models import AgentConfig, InboundMessage
from inbox.receive import message_receive, parse_raw
from inbox.sender_auth import aligned, organizational_domain

pytestmark = pytest.mark.django_db


def _raw(ar: str | None, *, sender: str = "jane@example.com", mid: str = "<sa1@example.com>") -> bytes:
    head = f"Authentication-Results: {ar}\r\n" if ar else ""
    return (
        f"{head}From: Jane <{sender}>\r\nTo: support@acme.test\r\nSubject: Invoice\r\nMessage-ID: {mid}\r\n"
        "Date: Mon, 30 Nov 2026 10:00:00 +0000\r\nMIME-Version: 1.0\r\nContent-Type: text/plain\r\n\r\n"
        "Hello, where can I download my invoice?\r\n"
    ).encode()


@pytest.mark.parametrize(
    ("ar", "expected", "detail"),
    [
        (
            "mx.acme.test; spf=fail smtp.mailfrom=evil.test; dkim=pass header.d=evil.test; dmarc=fail",
            False,
            "dmarc=fail",
        ),
        ("mx.acme.test; dkim=pass header.d=evil.test; dmarc=none", False, "not aligned"),
        ("mx.acme.test; spf=pass smtp.mailfrom=bounce@evil.test", False, "not aligned"),
        ("mx.acme.test; dkim=pass header.d=mail.example.com", True, "dkim aligned"),
        ("mx.acme.test; spf=pass smtp.mailfrom=bounce@eu.example.com", True, "spf aligned"),
        ("mx.acme.test; dmarc=pass header.from=example.com", True, "dmarc=pass"),
        # a field another server wrote proves nothing
        ("mx.evil.test; dkim=pass header.d=example.com; dmarc=pass", False, "no authentication results"),
    ],
)
def test_trusted_results_count_only_when_aligned_with_the_from_domain(settings, ar, expected, detail):
    settings.INBOX_AUTHSERV_ID = ["mx.acme.test"]
    verdict = parse_raw(_raw(ar)).sender_auth
    assert verdict.authenticated is expected and detail in verdict.detail


def test_organizational_domains_follow_the_public_suffix_list():
    assert organizational_domain("mail.example.co.uk") == "example.co.uk"
    assert aligned("bounce.shop.example.com", "example.com")
    assert not aligned("example.co.uk", "evil.co.uk")
    assert not aligned("", "example.com")


@pytest.fixture
def signing_key(dns_stand_in):
    key = rsa.generate_private_key(public_exponent=65537, key_size=1024)
    pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.TraditionalOpenSSL,
        serialization.NoEncryption(),
    )
    public = key.public_key().public_bytes(
        serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    dns_stand_in.set(
        "sel._domainkey.example.com", "TXT", [f"v=DKIM1; k=rsa; p={base64.b64encode(public).decode()}"]
    )
    dns_stand_in.set(
        "sel._domainkey.evil.test", "TXT", [f"v=DKIM1; k=rsa; p={base64.b64encode(public).decode()}"]
    )
    return pem


def _signed(pem: bytes, domain: str, **kw) -> bytes:
    raw = _raw(None, **kw)
    return dkim.sign(raw, b"sel", domain.encode(), pem, include_headers=[b"from", b"subject", b"to"]) + raw


def test_without_trusted_results_an_aligned_dkim_signature_is_verified(settings, signing_key):
    settings.INBOX_AUTHSERV_ID = ["mx.acme.test"]
    good = parse_raw(_signed(signing_key, "example.com")).sender_auth
    assert good.authenticated and good.detail == "dkim verified and aligned (example.com)"
    other = parse_raw(_signed(signing_key, "evil.test")).sender_auth
    assert not other.authenticated and "not aligned" in other.detail
    tampered = _signed(signing_key, "example.com").replace(b"Subject: Invoice", b"Subject: Refund")
    assert not parse_raw(tampered).sender_auth.authenticated
    assert not parse_raw(_raw(None)).sender_auth.authenticated


def test_reported_results_without_dmarc_do_not_authenticate(org, receive):
    only_dkim = receive(authentication={"spf": "pass", "dkim": "pass", "dmarc": "none"}).message
    assert only_dkim.sender_authenticated is False
    assert receive(authentication={"dmarc": "pass"}).message.sender_authenticated is True


def test_spoofed_customer_is_not_auto_answered(settings, ai_org, llm_server, run_pipeline):
    """Why 2 of the audit: `spf=fail; dkim=pass header.d=<attacker>; dmarc=fail` claiming an existing customer."""
    settings.INBOX_AUTHSERV_ID = ["mx.acme.test"]
    config, _ = AgentConfig.objects.get_or_create(organization=ai_org)
    config.is_auto_reply_enabled, config.is_shadow_mode, config.auto_send_delay_ms = True, False, 0
    config.save()
    ar = "mx.acme.test; spf=fail smtp.mailfrom=evil.test; dkim=pass header.d=evil.test; dmarc=fail"
    r = message_receive(organization_id=ai_org.pk, parsed=parse_raw(_raw(ar, mid="<spoof@example.com>")))
    run_pipeline()
    m = InboundMessage.objects.get(pk=r.message.pk)
    assert m.processing_status == "draft_ready" and m.approval_source is None
    assert "not authenticated" in m.agent_decision["reason"] and "dmarc=fail" in m.agent_decision["reason"]
