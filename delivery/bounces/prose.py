"""Bounces written as prose (no delivery-status report): which recipients failed and what the server said.

Two sources of recipients, both checked as addresses: flufl.bounce's detectors (Exim, qmail, Postfix, Exchange,
… — their permanent/temporary split is not used: it calls delay warnings "temporary"), and the small detectors
here for formats it has none for (Yahoo "Failure Notice", Office 365 prose NDRs, OpenSMTPD, Lotus Notes/Domino,
V5 sendmail, Courier, Japanese carriers) plus a generic reader of "<address>: … 550 …" lines. Each recipient gets
the diagnostic text that follows it; the reason comes from that text (`reasons.classify_failure`).

A recipient is kept only when it is an address (local@domain with a dot in the domain), not the bounce's own
sender or recipient (the VERP return path, MAILER-DAEMON, postmaster), not a Message-ID, pipe command or path.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from email.message import Message
from email.utils import getaddresses

from flufl.bounce import all_failures

from delivery.bounces.dsn import part_text

_ADDR_RE = re.compile(
    r"(?<![\w.+=/|\\-])([A-Za-z0-9][\w.+=!#$%&'*?^`{}~-]{0,63}@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+)"
)
_VALID_RE = re.compile(
    r"^[A-Za-z0-9!#$%&'*+=?^_`{}~-][\w.!#$%&'*+=?^`{}~-]{0,63}@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+$"
)
_SYSTEM_LOCALS = re.compile(
    r"^(mailer-daemon|postmaster|mail-daemon|mailerdaemon|double-bounce|noreply-dmarc)$", re.I
)
_CODE_RE = re.compile(r"(?<![\d.])([245]\d\d)(?:[ -]|$)|(?<![\d.])[245]\.\d{1,3}\.\d{1,3}(?!\d)")
_ORIGINAL_MARKERS = re.compile(
    r"^\s*(?:-{2,} ?(?:original message|this is a copy of the message|below this line is a copy|"
    r"the header of the original message|original message follows|undelivered message follows|"
    r"returned message|unsent message below|message header follows|headers of your message)|"
    r"--- ?below this line is a copy|original message follows|------ This is a copy|"
    r"\*\*\* ?original message|content-type: message/rfc822|"
    r"----- ?original message ?-----|received: from )",
    re.IGNORECASE | re.MULTILINE,
)
_WARNING_RE = re.compile(
    r"(this is a warning message only|you do not need to resend|will (?:continue to |keep )?(?:try|retry)|"
    r"still (?:be )?(?:being )?(?:retried|trying)|has not (?:yet )?been delivered|delayed mail|"
    r"delivery (?:status notification|notification) \(delay\)|message (?:delivery )?(?:is )?delayed|"
    r"delivery (?:is |has been )?delayed|hasn't been delivered yet|(?:delivery )?attempts? will continue|"
    r"will continue to be attempted|not yet been delivered|retry (?:will|until)|"
    r"will be retried|is still in the queue|queued for retry)",
    re.IGNORECASE,
)
_FINAL_RE = re.compile(
    r"(not going to try again|gave up|giving up|permanent(?:ly)? (?:error|failure|fatal)|could not be delivered(?! for more)|"
    r"was not delivered|couldn't be delivered(?! for more)|wasn't delivered|undeliverable|failed permanently|"
    r"delivery has failed|delivery to the following recipients? failed|fatal error|has expired|expired)",
    re.IGNORECASE,
)
MAX_TEXT = 100_000


@dataclass(frozen=True)
class ProseFailure:
    recipient: str
    diagnostic: str | None


def is_address(value: str | None, exclude: Iterable[str] = ()) -> bool:
    """An address worth acting on (see the module docstring)."""
    if not value or len(value) > 254:
        return False
    value = value.strip()
    if not _VALID_RE.match(value):
        return False
    local = value.rpartition("@")[0]
    if _SYSTEM_LOCALS.match(local) or local.startswith(("|", "/")):
        return False
    if re.fullmatch(r"[0-9a-f$.=_-]{20,}", local, re.I) or "$" in local:
        return False  # a Message-ID-like token
    return value.lower() not in {e.lower() for e in exclude if e}


def body_text(msg: Message) -> str:
    """The bounce's own text (text/plain, else de-tagged HTML), without the returned original message."""
    chunks: list[str] = []
    html: list[str] = []
    for part in _own_parts(msg):
        ctype = part.get_content_type()
        if ctype == "text/plain":
            chunks.append(part_text(part))
        elif ctype == "text/html":
            html.append(
                re.sub(
                    r"<[^>]+>", " ", re.sub(r"<br\s*/?>|</p>|</div>|</tr>", "\n", part_text(part), flags=re.I)
                )
            )
    text = "\n".join(chunks) or "\n".join(html)
    text = text[:MAX_TEXT]
    match = _ORIGINAL_MARKERS.search(text)
    return text[: match.start()] if match and match.start() > 40 else text


def _own_parts(msg: Message) -> list[Message]:
    if not msg.is_multipart():
        return [msg]
    found: list[Message] = []
    stack = [msg]
    while stack:
        part = stack.pop(0)
        if part.get_content_type() in ("message/rfc822", "text/rfc822-headers", "message/delivery-status"):
            continue
        if part.is_multipart():
            payload = part.get_payload()
            stack[0:0] = [p for p in payload if isinstance(p, Message)] if isinstance(payload, list) else []
        else:
            found.append(part)
    return found


_HEADER_ADDR_RE = re.compile(r"[\w.!#$%&'*+/=?^`{|}~-]+@[\w-]+(?:\.[\w-]+)*")


def own_addresses(msg: Message) -> set[str]:
    """The bounce's own sender and recipient addresses (never a failed recipient). A regular expression over the
    headers, not `getaddresses`: this runs for every message and must stay cheap."""
    values = " ".join(
        str(msg.get(h) or "") for h in ("From", "To", "Return-Path", "Sender", "Reply-To", "Delivered-To")
    )
    return {a.lower() for a in _HEADER_ADDR_RE.findall(values)}


def own_addresses_of(msg: Message, header: str) -> str:
    """The first address of one header of the bounce, lowercased ("" when none)."""
    found = getaddresses([str(msg.get(header) or "")])
    return found[0][1].lower() if found and found[0][1] else ""


def is_warning(text: str, subject: str) -> bool:
    """A delay warning: the MTA says it is still trying and does not say it gave up."""
    sample = f"{subject}\n{text[:6000]}"
    return bool(_WARNING_RE.search(sample)) and not _FINAL_RE.search(
        sample.replace("has not yet been delivered", "")
    )


def _segment(text: str, address: str) -> str | None:
    """The diagnostic that goes with `address`: the text from the address up to the next blank-line paragraph
    that names another address (at most 800 characters), plus the paragraph before it when it carries the code."""
    index = text.lower().find(address.lower())
    if index < 0:
        return None
    tail = text[index : index + 800]
    following = _ADDR_RE.search(tail, len(address) + 1)
    if following and following.group(1).lower() != address.lower():
        cut = tail.rfind("\n", 0, following.start())
        if cut > len(address):
            tail = tail[:cut]
    if not _CODE_RE.search(tail):
        tail = text[max(0, index - 400) : index] + " " + tail
    return " ".join(tail.split())[:998]


def _flufl(msg: Message) -> list[str]:
    try:
        temporary, permanent = all_failures(msg)
    except Exception:  # a detector choking on a malformed message
        return []
    found = []
    for value in [*permanent, *temporary]:
        found.append(value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value))
    return found


_FAILED_LIST_RE = re.compile(
    r"(?:following (?:address(?:\(es\)|es)?|recipients?)(?: had permanent fatal errors| failed| could not be "
    r"reached)?|was not delivered to|could not be delivered to|unable to deliver (?:your )?message to|"
    r"delivery to the following recipients? (?:failed|has failed)|your message to|wasn't delivered to|"
    r"couldn't be delivered to|list of recipients|addresses had permanent fatal errors|"
    r"failed to deliver to|undeliverable to|delivery has failed to these recipients|"
    r"not be delivered to the following|message could not be delivered|(?:is )?delayed to (?:these|the following) "
    r"recipients(?: or groups)?|following recipients haven't received)",
    re.IGNORECASE,
)


def _detected(text: str) -> list[str]:
    """Addresses named where the text announces failed recipients, else near an SMTP code."""
    found: list[str] = []
    for match in _FAILED_LIST_RE.finditer(text):
        window = text[match.end() : match.end() + 600]
        for address in _ADDR_RE.findall(window)[:20]:
            found.append(address)
        if found:
            break
    if found:
        return found
    for line_match in re.finditer(r"^.*$", text[:20000], re.MULTILINE):
        line = line_match.group(0)
        if _CODE_RE.search(line) or re.search(
            r"user unknown|no such|does not exist|not found|deferred", line, re.I
        ):
            found.extend(_ADDR_RE.findall(line))
    return found


def prose_failures(
    msg: Message, *, text: str | None = None, exclude: set[str] | None = None
) -> list[ProseFailure]:
    """The failed recipients of a prose bounce with their diagnostics (order kept, duplicates removed)."""
    text = body_text(msg) if text is None else text
    exclude = own_addresses(msg) if exclude is None else exclude
    failures = _checked(_detected(text), text, exclude)
    # flufl.bounce's detectors cost about as much as everything else together: only when ours found nothing
    return failures or _checked(_flufl(msg), text, exclude)


def _checked(candidates: list[str], text: str, exclude: set[str]) -> list[ProseFailure]:
    seen: set[str] = set()
    failures = []
    for candidate in candidates:
        address = candidate.strip().strip("<>.,;:'\"()[]").strip()
        if not is_address(address, exclude) or address.lower() in seen:
            continue
        seen.add(address.lower())
        failures.append(ProseFailure(address, _segment(text, address)))
    return failures[:50]
