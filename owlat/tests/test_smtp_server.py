"""The shared mail intake server (owlat.smtp_server): real SMTP and LMTP sessions on loopback against an intake
whose callbacks succeed, refuse and fail."""

from __future__ import annotations

import smtplib
from typing import Any

import pytest

from owlat.smtp_server import IntakeServer, MailIntake
from testsupport.waiting import free_port


class _Recording(MailIntake):
    name = "owlat-test"

    def __init__(self) -> None:
        self.delivered: list[tuple[list[str], bytes]] = []

    def recipient_reply(self, address: str, envelope: Any) -> str | None:
        if address.startswith("boom@"):
            raise RuntimeError("lookup failed")
        return "550 5.1.1 Nobody" if address.startswith("nobody@") else None

    def deliver(self, envelope: Any, raw: bytes) -> str:
        if b"explode" in raw:
            raise RuntimeError("database down")
        self.delivered.append((list(envelope.rcpt_tos), raw))
        return "250 OK: stored"


@pytest.fixture
def server():
    started = []

    def start(*, lmtp: bool = False, max_bytes: int = 10_000):
        s = IntakeServer(_Recording(), host="127.0.0.1", port=free_port(), max_bytes=max_bytes, lmtp=lmtp)
        s.start()
        started.append(s)
        return s

    yield start
    for s in started:
        s.stop()


def test_refusal_temporary_failure_and_delivery_over_smtp(server):
    s = server()
    with smtplib.SMTP("127.0.0.1", s.port, timeout=10) as client:
        client.ehlo()
        assert client.mail("a@x.test")[0] == 250
        assert client.rcpt("nobody@x.test")[0] == 550
        assert client.rcpt("boom@x.test")[0] == 451
        assert client.rcpt("ok@x.test")[0] == 250
        assert client.data(b"Subject: hi\r\n\r\nbody\r\n")[0] == 250
        with pytest.raises(smtplib.SMTPDataError) as err:
            client.sendmail("a@x.test", ["ok@x.test"], b"Subject: explode\r\n\r\nx\r\n")
        assert err.value.smtp_code == 451
    assert s.handler.intake.delivered[0][0] == ["ok@x.test"] and s.handler.received == 1


def test_lmtp_answers_once_per_recipient_and_size_limit_holds(server):
    s = server(lmtp=True, max_bytes=2000)
    with smtplib.LMTP("127.0.0.1", s.port, timeout=10) as client:
        client.ehlo_or_helo_if_needed()
        client.mail("a@x.test")
        client.rcpt("one@x.test")
        client.rcpt("two@x.test")
        assert client.data(b"Subject: hi\r\n\r\nb\r\n")[0] == 250
        assert client.getreply()[0] == 250  # the second recipient's own reply (RFC 2033 4.2)
    with smtplib.LMTP("127.0.0.1", s.port, timeout=10) as client, pytest.raises(smtplib.SMTPException):
        client.sendmail("a@x.test", ["one@x.test"], b"Subject: big\r\n\r\n" + b"x" * 5000 + b"\r\n")
    assert s.handler.intake.delivered == [(["one@x.test", "two@x.test"], s.handler.intake.delivered[0][1])]
