"""RFC 3464 delivery-status fields, read leniently.

Real MTAs write fields the email package's header parser loses: continuation lines without indentation,
`Action : failed` (a space before the colon), `Action: expired`, per-recipient blocks repeated without the blank
line between them, and the whole report pasted into a text/plain part (Amazon WorkMail, some appliances). The
reader here takes the text of the report and splits it into per-recipient blocks itself: a new block starts at a
blank line or where a recipient field repeats in the current block; a line that is not `Name: value` continues
the previous field.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from email.message import Message

from delivery.bounces.reasons import find_status

_FIELD_RE = re.compile(r"^([A-Za-z][A-Za-z0-9-]{1,40})[ \t]*:[ \t]*(.*)$")
_RECIPIENT_FIELDS = ("final-recipient", "original-recipient")
_DSN_FIELDS = frozenset(
    {
        "reporting-mta",
        "arrival-date",
        "received-from-mta",
        "original-envelope-id",
        "dsn-gateway",
        "final-recipient",
        "original-recipient",
        "action",
        "status",
        "remote-mta",
        "diagnostic-code",
        "last-attempt-date",
        "will-retry-until",
        "final-log-id",
        "x-postfix-queue-id",
        "x-postfix-sender",
        "x-actual-recipient",
        "x-supplementary-info",
        "x-display-name",
    }
)
MAX_DSN_TEXT = 200_000


@dataclass(frozen=True)
class DsnBlock:
    recipient: str | None
    action: str
    status: str | None
    diagnostic: str | None
    remote_mta: str | None


def _address(value: str | None) -> str | None:
    """`rfc822; user@example.com` → `user@example.com`."""
    if not value:
        return None
    _, _, addr = value.rpartition(";")
    addr = addr.strip().strip("<>").strip()
    return addr or None


def _clean(value: str | None) -> str | None:
    if not value:
        return None
    text = " ".join(value.split())
    return text[:998] or None


def _blocks(text: str) -> list[dict[str, str]]:
    blocks: list[dict[str, str]] = []
    current: dict[str, str] = {}
    last: str | None = None
    for line in text[:MAX_DSN_TEXT].splitlines():
        if not line.strip():
            if current:
                blocks.append(current)
            current, last = {}, None
            continue
        match = _FIELD_RE.match(line) if not line[:1].isspace() else None
        name = match.group(1).lower() if match else None
        if match and name is not None and (name in _DSN_FIELDS or name.startswith("x-")):
            repeated = name in current or "action" in current
            if name in _RECIPIENT_FIELDS and repeated and any(f in current for f in _RECIPIENT_FIELDS):
                blocks.append(current)
                current = {}
            current[name] = match.group(2).strip()
            last = name
        elif last is not None:
            current[last] += " " + line.strip()
    if current:
        blocks.append(current)
    return blocks


def read_dsn_text(text: str) -> list[DsnBlock]:
    """The per-recipient blocks (those with an `Action`) of a delivery-status report's text."""
    result = []
    for fields in _blocks(text):
        action = (fields.get("action") or "").strip().lower()
        if not action:
            continue
        recipient = _address(fields.get("original-recipient")) or _address(fields.get("final-recipient"))
        final = _address(fields.get("final-recipient"))
        if final and recipient and "@" not in recipient:
            recipient = final
        # "smtp; 550 5.1.1 …": the diagnostic type is not part of what the server said
        diagnostic = _clean(
            re.sub(
                r"^\s*(?:smtp|x-[\w-]+|x-postfix|x-local)\s*;\s*",
                "",
                fields.get("diagnostic-code") or "",
                flags=re.I,
            )
        )
        status = find_status(fields.get("status")) or find_status(diagnostic)
        result.append(
            DsnBlock(
                recipient=recipient,
                action=action.split()[0].strip(";,."),
                status=status,
                diagnostic=diagnostic,
                remote_mta=_address(fields.get("remote-mta")),
            )
        )
    return result


def part_text(part: Message) -> str:
    """The text of a MIME part, whether the email package parsed it into header blocks or not."""
    payload = part.get_payload()
    if isinstance(payload, list):
        chunks = []
        for block in payload:
            if isinstance(block, Message):
                lines = [f"{k}: {v}" for k, v in block.items()]
                body = block.get_payload()
                if isinstance(body, str) and body.strip():
                    lines.append(body)
                chunks.append("\n".join(lines))
        return "\n\n".join(chunks)
    raw = part.get_payload(decode=True)
    if isinstance(raw, bytes):
        charset = part.get_content_charset() or "utf-8"
        try:
            return raw.decode(charset, "replace")
        except LookupError:
            return raw.decode("utf-8", "replace")
    return str(payload or "")


_TEXT_DSN_RE = re.compile(r"^(?:Final|Original)-Recipient[ \t]*:", re.IGNORECASE | re.MULTILINE)
_TEXT_ACTION_RE = re.compile(r"^Action[ \t]*:", re.IGNORECASE | re.MULTILINE)


def dsn_in_text(text: str) -> list[DsnBlock]:
    """DSN fields pasted into a text part (no message/delivery-status part): read from the first recipient field."""
    match = _TEXT_DSN_RE.search(text)
    if match is None or not _TEXT_ACTION_RE.search(text, match.start() - 2000 if match.start() > 2000 else 0):
        return []
    start = text.rfind("\n\n", 0, match.start())
    return read_dsn_text(text[start + 1 if start >= 0 else 0 :])
