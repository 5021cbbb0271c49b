"""The bounce intake server: aiosmtpd speaking SMTP (or LMTP behind a local MTA) on a configurable port.

`RCPT` is refused (550) for any address the intake does not take — a forged VERP address is never accepted,
so it produces no state and no backscatter. After `DATA` the message is classified and applied in a worker
thread (the ORM is synchronous); the reply is 250 once applied, or 451 when the database failed or the send row
is not recorded as sent yet, so the sending MTA retries later (applying is idempotent: a repeated report is a `duplicate`).
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from aiosmtpd.controller import Controller
from aiosmtpd.lmtp import LMTP
from aiosmtpd.smtp import SMTP
from django.db import connections

from delivery.bounces.intake import IntakeResult, bounce_intake, recipient_accepted

logger = logging.getLogger(__name__)
MAX_MESSAGE_BYTES = 10 * 1024 * 1024


def _apply_sync(rcpt_tos: list[str], raw: bytes) -> list[IntakeResult]:
    """In an executor thread; its connection is closed after each message (bounces are rare, and a pooled
    thread's connection would otherwise outlive the server)."""
    try:
        return bounce_intake(rcpt_tos=rcpt_tos, raw=raw)
    finally:
        connections.close_all()


class BounceHandler:
    """aiosmtpd handler: RCPT filtered by `recipient_accepted`, DATA applied through `bounce_intake`."""

    def __init__(self) -> None:
        self.received = 0

    async def handle_RCPT(
        self, server: Any, session: Any, envelope: Any, address: str, rcpt_options: list[str]
    ) -> str:
        if not recipient_accepted(address):  # a signature check, no database
            return "550 5.1.1 No such bounce address"
        envelope.rcpt_tos.append(address)
        return "250 OK"

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        loop = asyncio.get_running_loop()
        # LMTP answers once per recipient (RFC 2033 4.2); SMTP once per message.
        replies = len(envelope.rcpt_tos) if isinstance(server, LMTP) else 1
        raw = envelope.original_content or envelope.content or b""
        if isinstance(raw, str):
            raw = raw.encode("utf-8", "surrogateescape")
        try:
            results = await loop.run_in_executor(None, _apply_sync, list(envelope.rcpt_tos), raw)
        except Exception:
            logger.exception("bounce intake failed; the sender will retry")
            return "\r\n".join(["451 4.3.0 Temporary failure, try again later"] * replies)
        if any(r.outcome == "retry_later" for r in results):
            return "\r\n".join(
                ["451 4.3.0 The message is not recorded as sent yet, try again later"] * replies
            )
        self.received += 1
        return "\r\n".join(["250 OK: processed"] * replies)


class BounceServer(Controller):
    """A threaded aiosmtpd controller; `lmtp=True` speaks LMTP (for a local MTA's `lmtp:` transport)."""

    def __init__(self, *, host: str, port: int, lmtp: bool = False) -> None:
        self.lmtp = lmtp
        super().__init__(
            BounceHandler(),
            hostname=host,
            port=port,
            ready_timeout=10.0,
            data_size_limit=MAX_MESSAGE_BYTES,
            server_hostname="owlat-bounces",
        )

    def factory(self) -> SMTP:
        cls = LMTP if self.lmtp else SMTP
        return cls(self.handler, **self.SMTP_kwargs)
