"""Inbound mail over SMTP or LMTP, for installations behind their own MTA (or with the MX pointed here):
the shared mail intake server (`owlat.smtp_server`), as the bounce intake is.

`RCPT` is accepted only for an address on a domain that an organization verified (`organization_for_recipients`),
so the listener is no open relay and unknown mail is refused before its DATA. After `DATA` the message goes
through the one receive path (`parse_raw` → `message_receive`):
250 once stored (a repeated Message-ID is a stored duplicate, also 250), 550/552 for mail that can never be
stored (no Message-ID, too large), 451 when the database failed so the sending MTA retries.

The MTA in front must write `Authentication-Results` under one of `INBOX_AUTHSERV_ID` and remove forged ones;
without them a message authenticates only by its own aligned DKIM signature (`inbox.sender_auth`).
"""

from __future__ import annotations

from typing import Any

from django.conf import settings

from owlat.smtp_server import IntakeServer, MailIntake


class InboxIntake(MailIntake):
    """RCPT limited to the organizations' verified domains (one organization per message), DATA through the
    receive path."""

    name = "owlat-inbox"

    def recipient_reply(self, address: str, envelope: Any) -> str | None:
        from inbox.views import organization_for_recipients

        org_id = organization_for_recipients([address])
        if org_id is None:
            return "550 5.1.1 No mailbox here for this address"
        known = getattr(envelope, "owlat_organization", None)
        if known is not None and known != org_id:
            return "452 4.5.3 One organization per message: send again for this recipient"
        envelope.owlat_organization = org_id
        return None

    def deliver(self, envelope: Any, raw: bytes) -> str:
        from inbox.receive import InvalidMessage, MessageTooLarge, message_receive, parse_raw

        try:
            parsed = parse_raw(raw)
            parsed.headers.setdefault("x-owlat-intake", "smtp")
            result = message_receive(
                organization_id=envelope.owlat_organization, parsed=parsed, actor="system:inbound_smtp"
            )
        except MessageTooLarge:
            return "552 5.3.4 Message too large"
        except InvalidMessage as exc:
            return f"550 5.6.0 {str(exc)[:200]}"
        return f"250 2.0.0 OK: {'duplicate' if not result.created else 'received'} {result.message.pk}"


def InboundServer(*, host: str, port: int, lmtp: bool = False) -> IntakeServer:
    """The inbox intake on `host:port`, not started."""
    return IntakeServer(
        InboxIntake(), host=host, port=port, max_bytes=settings.INBOX_MAX_MESSAGE_BYTES, lmtp=lmtp
    )
