"""The one SMTP/LMTP intake server (aiosmtpd) behind every mail listener: the bounce intake
(`delivery.bounces.server`, `manage.py run_bounce_server`) and the inbox intake (`inbox.smtp_intake`,
`manage.py run_inbox_smtp`).

An intake supplies two synchronous callbacks on a `MailIntake`: `recipient_reply` decides each `RCPT` (None
accepts it) and `deliver` stores the message after `DATA` and returns the SMTP reply. Both run in a worker thread
(the ORM is synchronous) whose database connections are closed after each call, so a pooled thread's connection
never outlives the server. A callback that raises is answered 451, so the sending MTA retries later; LMTP answers
once per recipient (RFC 2033 4.2), SMTP once per message. `IntakeCommand` is both management commands: options,
start, banner, wait for SIGINT/SIGTERM, stop.
"""

from __future__ import annotations

import abc
import asyncio
import logging
import signal
import threading
from typing import Any

from aiosmtpd.controller import Controller
from aiosmtpd.lmtp import LMTP
from aiosmtpd.smtp import SMTP
from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from django.db import connections

from owlat.management.arguments import port_arg

logger = logging.getLogger(__name__)

TEMPORARY_FAILURE = "451 4.3.0 Temporary failure, try again later"


class MailIntake(abc.ABC):
    """What an intake does with a session; subclasses override both callbacks (called in a worker thread)."""

    #: the name in the greeting and the logs, e.g. "owlat-bounces"
    name = "owlat-intake"

    def recipient_reply(self, address: str, envelope: Any) -> str | None:
        """None accepts `address`; else the refusal line (e.g. "550 5.1.1 …"). May set state on `envelope`."""
        return None

    @abc.abstractmethod
    def deliver(self, envelope: Any, raw: bytes) -> str:
        """Store the message; the reply line ("250 …", "550 …", "451 …")."""


def _in_thread(func: Any, *args: Any) -> Any:
    try:
        return func(*args)
    finally:
        connections.close_all()


class _Handler:
    """aiosmtpd handler adapting a `MailIntake`: callbacks in the executor, failures as 451."""

    def __init__(self, intake: MailIntake) -> None:
        self.intake = intake
        self.received = 0

    async def handle_RCPT(
        self, server: Any, session: Any, envelope: Any, address: str, rcpt_options: list[str]
    ) -> str:
        loop = asyncio.get_running_loop()
        try:
            refusal = await loop.run_in_executor(
                None, _in_thread, self.intake.recipient_reply, address, envelope
            )
        except Exception:
            logger.exception("%s: RCPT check failed", self.intake.name)
            return TEMPORARY_FAILURE
        if refusal:
            return refusal
        envelope.rcpt_tos.append(address)
        return "250 OK"

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        loop = asyncio.get_running_loop()
        replies = len(envelope.rcpt_tos) if isinstance(server, LMTP) else 1
        raw = envelope.original_content or envelope.content or b""
        if isinstance(raw, str):
            raw = raw.encode("utf-8", "surrogateescape")
        try:
            reply = await loop.run_in_executor(None, _in_thread, self.intake.deliver, envelope, raw)
        except Exception:
            logger.exception("%s: the message could not be applied; the sender will retry", self.intake.name)
            reply = TEMPORARY_FAILURE
        if reply.startswith("250"):
            self.received += 1
        return "\r\n".join([reply] * replies)


class IntakeServer(Controller):
    """A threaded aiosmtpd controller for `intake`; `lmtp=True` speaks LMTP (a local MTA's `lmtp:` transport)."""

    def __init__(
        self, intake: MailIntake, *, host: str, port: int, max_bytes: int, lmtp: bool = False
    ) -> None:
        self.lmtp = lmtp
        super().__init__(
            _Handler(intake),
            hostname=host,
            port=port,
            ready_timeout=10.0,
            data_size_limit=max_bytes,
            server_hostname=intake.name,
        )

    def factory(self) -> SMTP:
        cls = LMTP if self.lmtp else SMTP
        return cls(self.handler, **self.SMTP_kwargs)


class IntakeCommand(BaseCommand):
    """A management command running one `IntakeServer` until SIGINT/SIGTERM, with `--host`, `--port` and
    `--lmtp`; subclasses name their settings and build the intake. The banner is written (and flushed) once the
    server listens: process supervisors and the tests wait for it."""

    #: the settings holding the default listen address and port
    host_setting = ""
    port_setting = ""
    #: the first words of the banner, e.g. "Bounce intake"
    title = "Mail intake"

    def add_arguments(self, parser):
        parser.add_argument("--host", default=None, help=f"listen address (default {self.host_setting})")
        parser.add_argument(
            "--port", type=port_arg, default=None, help=f"listen port (default {self.port_setting})"
        )
        parser.add_argument("--lmtp", action="store_true", help="speak LMTP instead of SMTP")

    def build_intake(self) -> tuple[MailIntake, int]:
        """The intake and its largest accepted message in bytes; each command (bounces, inbox) defines it."""
        raise CommandError(f"{type(self).__name__} names no mail intake (build_intake)")

    def banner_detail(self) -> str:
        return ""

    def handle(self, *args, **options):
        host = options["host"] or getattr(settings, self.host_setting)
        port = options["port"] or getattr(settings, self.port_setting)
        intake, max_bytes = self.build_intake()
        server = IntakeServer(intake, host=host, port=port, max_bytes=max_bytes, lmtp=options["lmtp"])
        try:
            server.start()
        except (OSError, RuntimeError) as exc:
            raise CommandError(f"Cannot listen on {host}:{port}: {exc}") from exc
        stop = threading.Event()
        for signum in (signal.SIGINT, signal.SIGTERM):
            signal.signal(signum, lambda *_: stop.set())
        protocol = "LMTP" if options["lmtp"] else "SMTP"
        self.stdout.write(f"{self.title} ({protocol}) listening on {host}:{port}{self.banner_detail()}")
        self.stdout.flush()
        try:
            stop.wait()
        finally:
            server.stop()
        self.stdout.write(f"{self.title} stopped")
