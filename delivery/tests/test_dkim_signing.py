"""DKIM on the SMTP path (issue 11 item 2): a message sent through the SMTP provider to the loopback SMTP sink
carries a signature that dkimpy verifies against the key published in the DNS stand-in; rotation keeps signing
with the verified key; providers that sign themselves (the anymail ESPs) are left alone; the private key is
stored encrypted and survives a SECRET_KEY rotation through SECRET_KEY_FALLBACKS."""

from __future__ import annotations

import dkim
import pytest

from delivery.worker import dispatch_batch
from owlat.domains import keys, signing
from owlat.domains.resolver import lookup
from owlat.domains.verification import domain_check, domain_register, domain_rotate_dkim
from owlat.models import DkimKey, Domain

# transactional: the SMTP transport runs in the worker's sender thread, which reads the key over its own
# connection and sees committed rows only, as in production
pytestmark = pytest.mark.django_db(transaction=True)


def dns_txt(name: bytes, timeout: int = 5) -> bytes | None:
    """dkimpy's DNS hook, answered through the application's resolver (→ the stand-in)."""
    result = lookup(name.decode().rstrip("."), "TXT")
    return result.values[0].encode() if result.values else None


@pytest.fixture
def verified_domain(org, dns_stand_in, settings):
    settings.DELIVERY_TRANSACTIONAL_RATE = 0
    signing.clear_cache()
    Domain.objects.filter(organization=org).delete()  # the fixture's row predates verification
    domain = Domain.objects.create(organization=org, domain="acme.test")
    domain_register(domain, actor="test")
    domain.refresh_from_db()
    dns_stand_in.publish(domain.dns_records)
    assert domain_check(domain, actor="test").to_state == "verified"
    yield domain
    signing.clear_cache()


def test_smtp_mail_is_signed_and_verifies_against_the_published_key(verified_domain, make_tx_send, smtp_sink):
    send = make_tx_send()
    assert dispatch_batch("transactional", [str(send.pk)]).sent == 1
    [msg] = smtp_sink.wait_for(1)
    selector = DkimKey.objects.get(domain=verified_domain).selector
    assert f"s={selector}" in msg["DKIM-Signature"] and "d=acme.test" in msg["DKIM-Signature"]
    assert dkim.verify(msg.raw, dnsfunc=dns_txt)
    # tampering breaks it (the check is real)
    assert not dkim.verify(msg.raw.replace(b"Subject: Subject", b"Subject: Changed"), dnsfunc=dns_txt)


def test_rotation_signs_with_the_old_key_until_the_new_one_is_published(
    verified_domain, make_tx_send, smtp_sink, dns_stand_in
):
    old = DkimKey.objects.get(domain=verified_domain).selector
    _, new = domain_rotate_dkim(verified_domain, actor="test")
    signing.clear_cache()
    dispatch_batch("transactional", [str(make_tx_send().pk)])
    [first] = smtp_sink.wait_for(1)
    assert f"s={old};" in first["DKIM-Signature"].replace(" ", "") and dkim.verify(first.raw, dnsfunc=dns_txt)

    verified_domain.refresh_from_db()
    dns_stand_in.publish([r for r in verified_domain.dns_records if r["key"] == f"dkim:{new}"])
    domain_check(verified_domain, actor="test")
    signing.clear_cache()
    dispatch_batch("transactional", [str(make_tx_send().pk)])
    second = smtp_sink.wait_for(2)[1]
    assert f"s={new};" in second["DKIM-Signature"].replace(" ", "") and dkim.verify(
        second.raw, dnsfunc=dns_txt
    )
    assert DkimKey.objects.get(selector=old).retired_at is not None


def test_a_domain_whose_key_is_not_published_is_refused_not_sent_unsigned(
    org, make_tx_send, smtp_sink, settings
):
    settings.DELIVERY_TRANSACTIONAL_RATE = 0
    signing.clear_cache()
    keys.dkim_key_create(Domain.objects.get(organization=org))  # a key whose record was never found
    send = make_tx_send()
    assert dispatch_batch("transactional", [str(send.pk)]).sent == 0
    send.refresh_from_db()
    assert send.status == "failed" and send.error_code == "DKIM_UNAVAILABLE"
    assert "not published yet" in send.error_message and "Check now" in send.error_message
    assert smtp_sink.messages == []


def test_send_unsigned_policy_sends_the_unsignable_domain_unsigned(org, make_tx_send, smtp_sink, settings):
    settings.DELIVERY_TRANSACTIONAL_RATE = 0
    settings.DKIM_UNSIGNABLE = "send_unsigned"
    signing.clear_cache()
    keys.dkim_key_create(Domain.objects.get(organization=org))
    assert dispatch_batch("transactional", [str(make_tx_send().pk)]).sent == 1
    [msg] = smtp_sink.wait_for(1)
    assert msg["DKIM-Signature"] is None


def test_esp_providers_are_left_alone(verified_domain, make_tx_send, settings, http_receiver):
    from testsupport import Reply

    settings.EMAIL_PROVIDER = "postmark"
    settings.ANYMAIL = {"POSTMARK_SERVER_TOKEN": "t", "POSTMARK_API_URL": http_receiver.url + "/"}
    http_receiver.handler = lambda req: Reply(
        200,
        {
            "To": "x@example.com",
            "SubmittedAt": "2026-01-01T00:00:00Z",
            "MessageID": "pm-1",
            "ErrorCode": 0,
            "Message": "OK",
        },
    )
    assert dispatch_batch("transactional", [str(make_tx_send().pk)]).sent == 1
    [request] = http_receiver.requests_to("/email")
    assert b"DKIM-Signature" not in request.body


def test_private_keys_are_encrypted_and_survive_a_secret_key_rotation(org, settings):
    settings.SECRET_KEY = "first-secret-0123456789abcdef0123456789"
    key = keys.dkim_key_create(Domain.objects.get(organization=org))
    assert b"PRIVATE KEY" not in key.private_key_encrypted.encode()
    pem = keys.private_key_pem(key)
    assert pem.startswith(b"-----BEGIN PRIVATE KEY-----")

    settings.SECRET_KEY = "second-secret-0123456789abcdef0123456789"
    settings.SECRET_KEY_FALLBACKS = ["first-secret-0123456789abcdef0123456789"]
    assert keys.private_key_pem(key) == pem

    settings.SECRET_KEY_FALLBACKS = []
    with pytest.raises(keys.UndecryptableKey, match="SECRET_KEY_FALLBACKS"):
        keys.private_key_pem(key)
