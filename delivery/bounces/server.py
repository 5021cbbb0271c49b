"""The bounce intake server: the shared mail intake server (`owlat.smtp_server`) speaking SMTP (or LMTP behind a
local MTA) on a configurable port.

`RCPT` is refused (550) for any address the intake does not take — a forged VERP address is never accepted,
so it produces no state and no backscatter. After `DATA` the message is classified and applied; the reply is 250
once applied, or 451 when the database failed or the send row is not recorded as sent yet, so the sending MTA
retries later (applying is idempotent: a repeated report is a `duplicate`).
"""

from __future__ import annotations

from typing import Any

from delivery.bounces.intake import bounce_intake, recipient_accepted
from owlat.smtp_server import IntakeServer, MailIntake

MAX_MESSAGE_BYTES = 10 * 1024 * 1024


class BounceIntake(MailIntake):
    """RCPT filtered by `recipient_accepted` (a signature check), DATA applied through `bounce_intake`."""

    name = "owlat-bounces"

    def recipient_reply(self, address: str, envelope: Any) -> str | None:
        return None if recipient_accepted(address) else "550 5.1.1 No such bounce address"

    def deliver(self, envelope: Any, raw: bytes) -> str:
        results = bounce_intake(rcpt_tos=list(envelope.rcpt_tos), raw=raw)
        if any(r.outcome == "retry_later" for r in results):
            return "451 4.3.0 The message is not recorded as sent yet, try again later"
        return "250 OK: processed"


def BounceServer(*, host: str, port: int, lmtp: bool = False) -> IntakeServer:
    """The bounce intake on `host:port`, not started."""
    return IntakeServer(BounceIntake(), host=host, port=port, max_bytes=MAX_MESSAGE_BYTES, lmtp=lmtp)
