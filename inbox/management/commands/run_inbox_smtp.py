"""Receive inbound mail for the inbox over SMTP or LMTP (`inbox.smtp_intake`)."""

from __future__ import annotations

import signal
import threading

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from inbox.smtp_intake import InboundServer
from owlat.management.arguments import port_arg

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 2526


class Command(BaseCommand):
    help = (
        "Receive inbox mail over SMTP/LMTP (a local MTA's transport, or the MX of the support domains) on "
        "INBOX_SMTP_HOST:INBOX_SMTP_PORT (default 127.0.0.1:2526). Only addresses on verified domains are "
        "accepted. Runs until SIGINT/SIGTERM."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--host", default=None, help="listen address (default INBOX_SMTP_HOST or 127.0.0.1)"
        )
        parser.add_argument(
            "--port", type=port_arg, default=None, help="listen port (default INBOX_SMTP_PORT or 2526)"
        )
        parser.add_argument("--lmtp", action="store_true", help="speak LMTP instead of SMTP")

    def handle(self, *args, **options):
        host = options["host"] or getattr(settings, "INBOX_SMTP_HOST", "") or DEFAULT_HOST
        port = options["port"] or getattr(settings, "INBOX_SMTP_PORT", 0) or DEFAULT_PORT
        server = InboundServer(host=host, port=port, lmtp=options["lmtp"])
        try:
            server.start()
        except (OSError, RuntimeError) as exc:
            raise CommandError(f"Cannot listen on {host}:{port}: {exc}") from exc
        stop = threading.Event()
        for signum in (signal.SIGINT, signal.SIGTERM):
            signal.signal(signum, lambda *_: stop.set())
        protocol = "LMTP" if options["lmtp"] else "SMTP"
        self.stdout.write(f"Inbox intake ({protocol}) listening on {host}:{port}", ending="\n")
        self.stdout.flush()
        try:
            stop.wait()
        finally:
            server.stop()
        self.stdout.write("Inbox intake stopped")
