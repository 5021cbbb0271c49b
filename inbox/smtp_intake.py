"""Inbound mail over SMTP or LMTP, for installations behind their own MTA (or with the MX pointed here):
aiosmtpd, as the bounce intake is (`delivery.bounces.server`).

`RCPT` is accepted only for an address on a domain that an organization verified (`organization_for_recipients`),
so the listener is no open relay and unknown mail is refused before its DATA. After `DATA` the message goes
through the one receive path (`parse_raw` → `message_receive`) in a worker thread (the ORM is synchronous):
250 once stored (a repeated Message-ID is a stored duplicate, also 250), 550/552 for mail that can never be
stored (no Message-ID, too large), 451 when the database failed so the sending MTA retries.

The MTA in front must write `Authentication-Results` under one of `INBOX_AUTHSERV_ID` and remove forged ones;
without them a message authenticates only by its own aligned DKIM signature (`inbox.sender_auth`).
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from aiosmtpd.controller import Controller
from aiosmtpd.lmtp import LMTP
from aiosmtpd.smtp import SMTP
from django.conf import settings
from django.db import connections

logger = logging.getLogger(__name__)


def _organization_sync(addresses: list[str]) -> Any:
    from inbox.views import organization_for_recipients

    try:
        return organization_for_recipients(addresses)
    finally:
        connections.close_all()


def _receive_sync(organization_id: Any, raw: bytes) -> str:
    from inbox.receive import InvalidMessage, MessageTooLarge, message_receive, parse_raw

    try:
        parsed = parse_raw(raw)
        parsed.headers.setdefault("x-owlat-intake", "smtp")
        result = message_receive(organization_id=organization_id, parsed=parsed, actor="system:inbound_smtp")
        return f"250 2.0.0 OK: {'duplicate' if not result.created else 'received'} {result.message.pk}"
    except MessageTooLarge:
        return "552 5.3.4 Message too large"
    except InvalidMessage as exc:
        return f"550 5.6.0 {str(exc)[:200]}"
    finally:
        connections.close_all()


class InboundHandler:
    """aiosmtpd handler: RCPT limited to the organizations' verified domains, DATA through the receive path."""

    def __init__(self) -> None:
        self.received = 0

    async def handle_RCPT(
        self, server: Any, session: Any, envelope: Any, address: str, rcpt_options: list[str]
    ) -> str:
        loop = asyncio.get_running_loop()
        try:
            org_id = await loop.run_in_executor(None, _organization_sync, [address])
        except Exception:
            logger.exception("inbound RCPT lookup failed")
            return "451 4.3.0 Temporary failure, try again later"
        if org_id is None:
            return "550 5.1.1 No mailbox here for this address"
        known = getattr(envelope, "owlat_organization", None)
        if known is not None and known != org_id:
            return "452 4.5.3 One organization per message: send again for this recipient"
        envelope.owlat_organization = org_id
        envelope.rcpt_tos.append(address)
        return "250 OK"

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        loop = asyncio.get_running_loop()
        replies = len(envelope.rcpt_tos) if isinstance(server, LMTP) else 1  # LMTP: one per recipient
        raw = envelope.original_content or envelope.content or b""
        if isinstance(raw, str):
            raw = raw.encode("utf-8", "surrogateescape")
        try:
            reply = await loop.run_in_executor(None, _receive_sync, envelope.owlat_organization, raw)
        except Exception:
            logger.exception("inbound mail could not be stored; the sender will retry")
            reply = "451 4.3.0 Temporary failure, try again later"
        if reply.startswith("250"):
            self.received += 1
        return "\r\n".join([reply] * replies)


class InboundServer(Controller):
    """A threaded aiosmtpd controller; `lmtp=True` speaks LMTP (a local MTA's `lmtp:` transport)."""

    def __init__(self, *, host: str, port: int, lmtp: bool = False) -> None:
        self.lmtp = lmtp
        super().__init__(
            InboundHandler(),
            hostname=host,
            port=port,
            ready_timeout=10.0,
            data_size_limit=settings.INBOX_MAX_MESSAGE_BYTES,
            server_hostname="owlat-inbox",
        )

    def factory(self) -> SMTP:
        cls = LMTP if self.lmtp else SMTP
        return cls(self.handler, **self.SMTP_kwargs)
