"""IMAP connections go to the address the outbound guard approved, never to a second resolution of the host
(DNS rebinding), and TLS names the host (SNI, certificate check), not the address."""

from __future__ import annotations

import socket
import ssl

import pytest

from inbox.imap_pinned import PinnedIMAPClient, _PinnedTLS
from inbox.imap_poll import MailboxUnavailable, connect, poll_mailbox
from inbox.models import ImapMailbox, ImapSecurity, InboundMessage
from inbox.provider_settings import encrypt_key
from inbox.tests.test_imap_intake import raw_mail

pytestmark = pytest.mark.django_db

HOST = "imap.rebind.example"  # resolves nowhere: only the guard's (pinned) answer leads to the server


@pytest.fixture
def pinned_mailbox(ai_org, imap_server, settings, monkeypatch):
    from owlat import outbound

    settings.INBOX_AUTHSERV_ID = ["mx.acme.test"]
    settings.OUTBOUND_ALLOWED_HOSTS = [HOST]
    answers = {"now": ["127.0.0.1"]}
    monkeypatch.setattr(outbound, "resolve", lambda host, port: answers["now"] if host == HOST else [])
    real = socket.getaddrinfo

    def no_second_lookup(host, *args, **kwargs):
        assert host != HOST, "the IMAP client resolved the host again"
        return real(host, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", no_second_lookup)
    box = ImapMailbox.objects.create(
        organization=ai_org,
        name="Support",
        host=HOST,
        port=imap_server.port,
        security=ImapSecurity.NONE,
        username=imap_server.username,
        password_encrypted=encrypt_key(imap_server.password),
    )
    return box, answers


def test_the_client_connects_to_the_guarded_address_and_never_resolves_again(pinned_mailbox, imap_server):
    box, _ = pinned_mailbox
    box.read_existing = True
    box.save()
    imap_server.deliver(raw_mail(1))
    result = poll_mailbox(box.pk)
    assert result.received == 1 and not result.error, result
    assert InboundMessage.objects.filter(organization_id=box.organization_id).count() == 1


def test_a_host_that_now_resolves_privately_is_refused(pinned_mailbox, settings):
    box, answers = pinned_mailbox
    settings.OUTBOUND_ALLOWED_HOSTS = []  # no exception for it: the guard judges the address
    answers["now"] = ["10.0.0.5"]
    with pytest.raises(MailboxUnavailable, match="not a public address"):
        connect(box)


def test_tls_names_the_host_not_the_address(monkeypatch):
    seen = {}

    def fake_connection(address, timeout=None):
        seen["address"] = address
        return socket.socket()

    def fake_wrap(sock, context, host):
        seen["sni"], seen["check_hostname"] = host, context.check_hostname
        seen["verify"] = context.verify_mode == ssl.CERT_REQUIRED
        sock.close()
        raise ssl.SSLError("stop here")

    from inbox import imap_pinned

    monkeypatch.setattr(imap_pinned.socket, "create_connection", fake_connection)
    monkeypatch.setattr(imap_pinned.tls, "wrap_socket", fake_wrap)
    with pytest.raises(ssl.SSLError):
        PinnedIMAPClient("imap.mail.example", addresses=["203.0.113.9"], port=993, ssl=True, timeout=2)
    assert seen == {
        "address": ("203.0.113.9", 993),
        "sni": "imap.mail.example",
        "check_hostname": True,
        "verify": True,
    }
    assert issubclass(_PinnedTLS, imap_pinned.tls.IMAP4_TLS)
