"""Receive inbound mail for the inbox over SMTP or LMTP (`inbox.smtp_intake`)."""

from __future__ import annotations

from django.conf import settings

from inbox.smtp_intake import InboxIntake
from owlat.smtp_server import IntakeCommand


class Command(IntakeCommand):
    help = (
        "Receive inbox mail over SMTP/LMTP (a local MTA's transport, or the MX of the support domains) on "
        "INBOX_SMTP_HOST:INBOX_SMTP_PORT (default 127.0.0.1:2526). Only addresses on verified domains are "
        "accepted. Runs until SIGINT/SIGTERM."
    )
    host_setting = "INBOX_SMTP_HOST"
    port_setting = "INBOX_SMTP_PORT"
    title = "Inbox intake"

    def build_intake(self):
        return InboxIntake(), settings.INBOX_MAX_MESSAGE_BYTES
