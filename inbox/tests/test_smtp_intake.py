"""Inbound mail over SMTP and LMTP (inbox.smtp_intake): a real loopback SMTP session delivers mail that reaches
`draft_ready`; recipients on domains no organization verified are refused at RCPT."""

from __future__ import annotations

import smtplib
import subprocess
import sys

import pytest

from inbox.models import InboundMessage
from owlat.models import Domain, DomainStatus
from testsupport.waiting import free_port

pytestmark = pytest.mark.django_db(transaction=True)

RAW = (
    b"From: Jane Doe <jane@example.com>\r\nTo: support@acme.test\r\nSubject: Where is my invoice?\r\n"
    b"Message-ID: <smtp-%d@example.com>\r\nDate: Mon, 30 Nov 2026 10:00:00 +0000\r\n"
    b"Authentication-Results: mx.acme.test; dmarc=pass header.from=example.com\r\n"
    b"Content-Type: text/plain\r\n\r\nHello, where can I download my invoice?\r\n"
)


@pytest.fixture
def intake(ai_org, settings):
    from inbox.smtp_intake import InboundServer

    settings.INBOX_AUTHSERV_ID = ["mx.acme.test"]
    Domain.objects.filter(organization=ai_org, domain="acme.test").delete()
    Domain.objects.create(organization=ai_org, domain="acme.test", status=DomainStatus.VERIFIED)
    servers = []

    def start(*, lmtp: bool = False):
        server = InboundServer(host="127.0.0.1", port=free_port(), lmtp=lmtp)
        server.start()
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.stop()


@pytest.mark.parametrize("lmtp", [False, True])
def test_mail_over_smtp_and_lmtp_reaches_draft_ready(lmtp, intake, llm_server, run_pipeline):
    server = intake(lmtp=lmtp)
    client_cls = smtplib.LMTP if lmtp else smtplib.SMTP
    with client_cls("127.0.0.1", server.port, timeout=10) as client:
        refused = client.sendmail("jane@example.com", ["support@acme.test"], RAW % int(lmtp))
        assert refused == {}
        with pytest.raises(smtplib.SMTPRecipientsRefused):
            client.sendmail("jane@example.com", ["someone@unknown.test"], RAW % 9)
    run_pipeline()
    m = InboundMessage.objects.get(message_id=f"<smtp-{int(lmtp)}@example.com>")
    assert m.processing_status == "draft_ready" and m.sender_authenticated
    assert m.headers["x-owlat-intake"] == "smtp"
    assert not InboundMessage.objects.filter(message_id="<smtp-9@example.com>").exists()


def test_mail_without_message_id_is_refused_permanently(intake):
    server = intake()
    raw = b"From: jane@example.com\r\nTo: support@acme.test\r\nSubject: x\r\n\r\nbody\r\n"
    with (
        smtplib.SMTP("127.0.0.1", server.port, timeout=10) as client,
        pytest.raises(smtplib.SMTPDataError) as err,
    ):
        client.sendmail("jane@example.com", ["support@acme.test"], raw)
    assert err.value.smtp_code == 550 and b"Message-ID" in err.value.smtp_error


def test_run_inbox_smtp_refuses_a_bad_port():
    from testsupport import BASE_DIR
    from testsupport.workers import worker_environment

    proc = subprocess.run(
        [sys.executable, "manage.py", "run_inbox_smtp", "--port", "99999"],
        cwd=BASE_DIR,
        env=worker_environment(),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode != 0 and "not a port number" in proc.stderr
