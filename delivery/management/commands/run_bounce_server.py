"""Run the bounce intake: an SMTP (or LMTP) server receiving DSNs, non-standard bounces and ARF complaints for the
VERP return paths, applied through the send lifecycle (DLV-12)."""

from __future__ import annotations

from django.conf import settings

from delivery.bounces.server import MAX_MESSAGE_BYTES, BounceIntake
from owlat.smtp_server import IntakeCommand


class Command(IntakeCommand):
    help = (
        "Receive bounces and feedback reports over SMTP/LMTP on BOUNCE_SERVER_HOST:BOUNCE_SERVER_PORT "
        "(point the BOUNCE_DOMAIN's MX, or a local MTA's transport, at it). Runs until SIGINT/SIGTERM."
    )
    host_setting = "BOUNCE_SERVER_HOST"
    port_setting = "BOUNCE_SERVER_PORT"
    title = "Bounce intake"

    def build_intake(self):
        return BounceIntake(), MAX_MESSAGE_BYTES

    def banner_detail(self) -> str:
        return f" for {settings.BOUNCE_DOMAIN or '(BOUNCE_DOMAIN not set: no VERP return paths are issued)'}"
