"""Run the bounce intake (issue 11 item 3): an SMTP (or LMTP) server receiving DSNs, non-standard bounces and ARF
complaints for the VERP return paths, applied through the send lifecycle (DLV-12)."""

from __future__ import annotations

import signal
import threading

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from delivery.bounces.server import BounceServer
from owlat.management.arguments import port_arg


class Command(BaseCommand):
    help = (
        "Receive bounces and feedback reports over SMTP/LMTP on BOUNCE_SERVER_HOST:BOUNCE_SERVER_PORT "
        "(point the BOUNCE_DOMAIN's MX, or a local MTA's transport, at it). Runs until SIGINT/SIGTERM."
    )

    def add_arguments(self, parser):
        parser.add_argument("--host", default=None, help="listen address (default BOUNCE_SERVER_HOST)")
        parser.add_argument(
            "--port", type=port_arg, default=None, help="listen port (default BOUNCE_SERVER_PORT)"
        )
        parser.add_argument("--lmtp", action="store_true", help="speak LMTP instead of SMTP")

    def handle(self, *args, **options):
        host = options["host"] or settings.BOUNCE_SERVER_HOST
        port = options["port"] or settings.BOUNCE_SERVER_PORT
        server = BounceServer(host=host, port=port, lmtp=options["lmtp"])
        try:
            server.start()
        except (OSError, RuntimeError) as exc:
            raise CommandError(f"Cannot listen on {host}:{port}: {exc}") from exc
        stop = threading.Event()
        for signum in (signal.SIGINT, signal.SIGTERM):
            signal.signal(signum, lambda *_: stop.set())
        protocol = "LMTP" if options["lmtp"] else "SMTP"
        domain = settings.BOUNCE_DOMAIN or "(BOUNCE_DOMAIN not set: no VERP return paths are issued)"
        self.stdout.write(f"Bounce intake ({protocol}) listening on {host}:{port} for {domain}", ending="\n")
        self.stdout.flush()
        try:
            stop.wait()
        finally:
            server.stop()
        self.stdout.write("Bounce intake stopped")
