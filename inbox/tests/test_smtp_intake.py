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


def _start_command(name: str, env: dict, log_path) -> subprocess.Popen:
    """`manage.py <name>` on the test database; returns once its banner says it listens."""
    import time

    from testsupport import BASE_DIR
    from testsupport.workers import worker_environment

    log = log_path.open("wb")
    proc = subprocess.Popen(
        [sys.executable, "manage.py", name],
        cwd=BASE_DIR,
        env=worker_environment(env),
        stdout=log,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 60
    while b"listening on" not in log_path.read_bytes():
        assert proc.poll() is None and time.monotonic() < deadline, log_path.read_text()
        time.sleep(0.1)
    return proc


def _stop(proc: subprocess.Popen) -> None:
    proc.terminate()  # this test's own process only
    proc.wait(timeout=20)


def test_run_inbox_smtp_listens_on_inbox_smtp_port_and_stores_mail(intake, tmp_path):
    port = free_port()
    proc = _start_command("run_inbox_smtp", {"INBOX_SMTP_PORT": str(port)}, tmp_path / "inbox.log")
    try:
        assert f"listening on 127.0.0.1:{port}" in (tmp_path / "inbox.log").read_text()
        with smtplib.SMTP("127.0.0.1", port, timeout=10) as client:
            assert client.sendmail("jane@example.com", ["support@acme.test"], RAW % 21) == {}
            with pytest.raises(smtplib.SMTPRecipientsRefused):
                client.sendmail("jane@example.com", ["x@unknown.test"], RAW % 22)
    finally:
        _stop(proc)
    m = InboundMessage.objects.get(message_id="<smtp-21@example.com>")
    assert m.headers["x-owlat-intake"] == "smtp"
    assert "Inbox intake stopped" in (tmp_path / "inbox.log").read_text()


def test_run_bounce_server_on_the_shared_server_refuses_forged_rcpt(tmp_path, settings):
    """The bounce command runs on the same intake server: a forged VERP address is refused at RCPT, an
    unexpected failure while applying is a 451 (the sender retries), never a dropped connection."""
    port = free_port()
    env = {"BOUNCE_SERVER_PORT": str(port), "BOUNCE_DOMAIN": "bounce-intake.owlat.test"}
    proc = _start_command("run_bounce_server", env, tmp_path / "bounce.log")
    try:
        with smtplib.SMTP("127.0.0.1", port, timeout=10) as client:
            client.ehlo()
            code, _ = client.mail("")
            assert code == 250
            code, reply = client.rcpt("b-forged0000@bounce-intake.owlat.test")
            assert code == 550 and b"No such bounce address" in reply
            code, _ = client.rcpt("fbl@acme.test")  # a feedback-loop address: accepted
            assert code == 250
            code, _ = client.data(b"Subject: not a report\r\n\r\nhello\r\n")
            assert code == 250  # not a bounce: recorded as ignored, accepted so it is not retried
    finally:
        _stop(proc)
    assert "for bounce-intake.owlat.test" in (tmp_path / "bounce.log").read_text()
