"""What a message received by the bounce intake says (no database access).

Order of the checks, most authoritative first:

1. RFC 5965 ARF (`message/feedback-report`) → `complaint` per `Original-Rcpt-To` (`not-spam` is none);
2. Amazon SES/SNS JSON notifications → per bounced recipient, `complaint`, or `not_a_bounce` (`Delivery`);
3. RFC 3464 DSN (`message/delivery-status`, read leniently by `dsn`), per recipient block: `failed`/`expired`
   → a failure whose reason (`reasons.classify_failure`) decides `hard` / `soft` / `block`; `delayed` only →
   `delayed`; `delivered`/`relayed`/`expanded` only → `not_a_bounce`. A report whose fields cannot be read
   falls through to the prose detectors;
4. Hotmail JMRP complaints (an attached message with `X-HmXmrOriginalRecipient`);
5. DSN fields pasted into a text part;
6. unless it comes from a mail system, auto-replies and challenge-response messages → `auto_reply`;
7. delay warnings written as prose ("THIS IS A WARNING MESSAGE ONLY") → `delayed`;
8. prose bounces (`prose`: flufl.bounce plus our detectors), each recipient's reason from its diagnostic;
9. anything else → `not_a_bounce`.

Kinds: `hard` (the address is dead: suppressed at once), `soft` (counted within a window), `block` (the receiver
refused the sender: never suppresses), `complaint`, `delayed`, `auto_reply`, `not_a_bounce`.
"""

from __future__ import annotations

import email
import email.policy
import logging
import re
from dataclasses import dataclass, field, replace
from email.message import Message
from email.parser import HeaderParser
from typing import Literal

from delivery.bounces import feedback, prose
from delivery.bounces import reasons as R
from delivery.bounces.dsn import DsnBlock, dsn_in_text, part_text, read_dsn_text

logger = logging.getLogger(__name__)

Kind = Literal["hard", "soft", "block", "complaint", "delayed", "auto_reply", "not_a_bounce"]
FAILURE_KINDS = ("hard", "soft", "block")
_FAILED_ACTIONS = ("failed", "failure", "error", "expired", "undeliverable", "bounced")
_DELAYED_ACTIONS = ("delayed", "delay", "deferred")
_POSITIVE_ACTIONS = ("delivered", "relayed", "expanded", "deliverable")
_AUTO_SUBJECT_RE = re.compile(
    r"^\s*(auto(matic)?[ -]?(reply|response|antwort)|out of (the )?office|abwesenheit|absence|"
    r"r[ée]ponse automatique|on vacation|away from (the )?office|autoreply|vacation reply)",
    re.IGNORECASE,
)
_CHALLENGE_SUBJECT_RE = re.compile(
    r"(please (confirm|verify)|verify your (e-?mail|address|message)|confirm your (e-?mail|message)|"
    r"sender verification|challenge|awaiting your (confirmation|verification)|is your message legitimate)",
    re.IGNORECASE,
)
_BOUNCE_SUBJECT_RE = re.compile(
    r"(undeliver|undelivered|delivery (status notification|failure|has failed|problem|report)|mail delivery "
    r"failed|returned mail|failure notice|could not be delivered|non[- ]?delivery|delivery notification|"
    r"mail system error|returned to sender|delivery failed|warning: could not send|delayed mail|"
    r"nicht zustellbar|unzustellbar|non remis|non recapitabile|error sending)",
    re.IGNORECASE,
)
_DAEMON_RE = re.compile(r"(mailer-daemon|postmaster|mail delivery (sub)?system|mail-daemon)", re.IGNORECASE)
_CHALLENGE_HEADERS = ("X-Boxbe-Challenge", "X-Spamarrest-Noauth", "X-Challenge", "X-Bluebottle-Request")


@dataclass(frozen=True)
class Failure:
    """One recipient of a report: its kind, reason, status code and diagnostic."""

    address: str | None
    kind: Kind
    reason: str
    status: str | None = None
    diagnostic: str | None = None


@dataclass(frozen=True)
class BounceReport:
    kind: Kind
    recipients: tuple[str, ...] = ()
    status: str | None = None
    diagnostic: str | None = None
    feedback_type: str | None = None
    reason: str = R.NOT_A_BOUNCE
    entries: tuple[Failure, ...] = field(default_factory=tuple)
    reporting_mta: str | None = None
    # The original message's headers, when the report carries them (DSN part 3, ARF part 3).
    original_message_id: str | None = None
    original_return_path: str | None = None
    original_to: str | None = None

    @property
    def is_bounce(self) -> bool:
        return self.kind in FAILURE_KINDS

    @property
    def summary(self) -> str:
        parts = [p for p in (self.status, self.diagnostic) if p]
        return " ".join(parts)[:1000] or self.kind

    def entry_for(self, address: str | None) -> Failure | None:
        """The entry about `address` (case-insensitive), else the report's own (first of its kind)."""
        wanted = (address or "").strip().lower()
        for entry in self.entries:
            if wanted and (entry.address or "").lower() == wanted:
                return entry
        return next((e for e in self.entries if e.kind == self.kind), None)


def message_from_bytes(raw: bytes) -> Message:
    return email.message_from_bytes(raw, policy=email.policy.compat32)


def _h(msg: Message, name: str) -> str:
    """A header as text (compat32 hands back a `Header` object for undecodable bytes)."""
    value = msg.get(name)
    return "" if value is None else str(value)


def _clean(value: object) -> str | None:
    if value is None:
        return None
    text = " ".join(str(value).split())
    return text[:998] or None


def _original_headers(msg: Message) -> Message | None:
    """The returned original message (message/rfc822) or its headers (text/rfc822-headers)."""
    for part in msg.walk():
        ctype = part.get_content_type()
        if ctype == "message/rfc822":
            payload = part.get_payload()
            if isinstance(payload, list) and payload:
                return payload[0]
        if ctype == "text/rfc822-headers":
            return HeaderParser().parsestr(part_text(part))
    return None


def _report(
    kind: Kind,
    entries: list[Failure],
    original: Message | None,
    *,
    recipients: list[str] | None = None,
    diagnostic: str | None = None,
    reason: str | None = None,
    feedback_type: str | None = None,
    reporting_mta: str | None = None,
) -> BounceReport:
    primary = next((e for e in entries if e.kind == kind), None)
    found: list[str] = []
    for address in [*(e.address for e in entries if e.kind == kind), *(recipients or [])]:
        if address and address not in found:
            found.append(address)
    return BounceReport(
        kind=kind,
        recipients=tuple(found),
        status=primary.status if primary else None,
        diagnostic=(primary.diagnostic if primary else None) or diagnostic,
        reason=primary.reason if primary else (reason or kind),
        entries=tuple(entries),
        feedback_type=feedback_type,
        reporting_mta=reporting_mta,
        original_message_id=_clean(_h(original, "Message-ID")) if original is not None else None,
        original_return_path=_clean(_h(original, "Return-Path")) if original is not None else None,
        original_to=_clean(_h(original, "To")) if original is not None else None,
    )


def _winner(entries: list[Failure]) -> Kind:
    for kind in ("hard", "soft", "block", "delayed"):
        if any(e.kind == kind for e in entries):
            return kind  # type: ignore[return-value]
    return "not_a_bounce"


def _failure(
    address: str | None, status: str | None, diagnostic: str | None, *, expired: bool = False
) -> Failure:
    reason = R.classify_failure(status, diagnostic)
    if expired and reason in (R.OTHER, *R.HARD_REASONS):
        reason = R.EXPIRED
    elif reason == R.OTHER and (status or "").startswith("4."):
        reason = R.EXPIRED  # failed after temporary errors: the MTA gave up
    return Failure(address, R.kind_of(reason), reason, status, diagnostic)  # type: ignore[arg-type]


def _from_blocks(blocks: list[DsnBlock], msg: Message, exclude: set[str]) -> list[Failure] | None:
    """Entries of readable DSN blocks; None when no block says anything usable."""
    entries: list[Failure] = []
    text: str | None = None
    for block in blocks:
        address = block.recipient if prose.is_address(block.recipient, exclude) else None
        action = block.action
        if action.startswith(_FAILED_ACTIONS):
            diagnostic = block.diagnostic
            if not diagnostic or R.reason_from_text(diagnostic) is None:
                text = prose.body_text(msg) if text is None else text
                extra = _segment_for(text, address) if address else None
                diagnostic = " ".join(p for p in (diagnostic, extra) if p)[:998] or None
            entries.append(_failure(address, block.status, diagnostic, expired=action.startswith("expired")))
        elif action.startswith(_DELAYED_ACTIONS):
            entries.append(Failure(address, "delayed", R.DELAYED, block.status, block.diagnostic))
        elif action.startswith(_POSITIVE_ACTIONS):
            entries.append(Failure(address, "not_a_bounce", R.NOT_A_BOUNCE, block.status, block.diagnostic))
    return entries or None


def _segment_for(text: str, address: str) -> str | None:
    index = text.lower().find(address.lower())
    return " ".join(text[index : index + 600].split()) if index >= 0 else None


def _excluded(msg: Message, original: Message | None) -> set[str]:
    exclude = prose.own_addresses(msg)
    if original is not None:
        exclude |= prose.own_addresses(original) - {
            a.lower() for a in re.findall(r"[\w.+-]+@[\w.-]+", _h(original, "To") + _h(original, "Cc"))
        }
    return exclude


def bounce_classify(raw: bytes | Message) -> BounceReport:
    """What one received message reports (see the module docstring for the order of the checks); a message
    too malformed to read is `not_a_bounce` (acknowledged, never retried forever)."""
    try:
        return _classify(message_from_bytes(raw) if isinstance(raw, bytes) else raw)
    except Exception:
        logger.warning("unreadable message at the bounce intake; ignored", exc_info=True)
        return BounceReport(kind="not_a_bounce", diagnostic="unreadable message")


def _classify(msg: Message) -> BounceReport:
    original = _original_headers(msg)
    found = feedback.arf(msg, original)
    if found is not None:
        kind = found["kind"]
        return _report(
            kind,
            [
                Failure(a, kind, R.COMPLAINT if kind == "complaint" else R.NOT_A_BOUNCE)
                for a in found["recipients"]
            ],
            original,
            feedback_type=found["feedback_type"],
            diagnostic=f"Feedback-Type: {found['feedback_type']}",
            reason=R.COMPLAINT if kind == "complaint" else R.NOT_A_BOUNCE,
        )
    ses = feedback.ses_notification(msg)
    if ses is not None:
        return _from_ses(ses)
    exclude = _excluded(msg, original)
    dsn_texts = [part_text(p) for p in msg.walk() if p.get_content_type() == "message/delivery-status"]
    blocks = [b for text in dsn_texts for b in read_dsn_text(text)]
    entries = _from_blocks(blocks, msg, exclude) if blocks else None
    mta = _reporting_mta(msg, dsn_texts)
    if entries:
        return _report(_winner(entries), entries, original, reporting_mta=mta)
    complaint = feedback.jmrp(msg)
    if complaint is not None:
        entries = [Failure(a, "complaint", R.COMPLAINT) for a in complaint["recipients"]]
        return _report("complaint", entries, original, feedback_type="abuse", diagnostic="JMRP complaint")
    text = prose.body_text(msg)
    blocks = dsn_in_text(text)
    entries = _from_blocks(blocks, msg, exclude) if blocks else None
    if entries:
        return _report(_winner(entries), entries, original, reporting_mta=_reporting_mta(msg, [text]))
    report = _classify_prose(msg, text, original, exclude)
    return replace(report, reporting_mta=mta) if report.is_bounce else report


_REPORTING_MTA_RE = re.compile(
    r"^Reporting-MTA[ \t]*:[ \t]*(?:dns;)?[ \t]*([\w.-]+)", re.IGNORECASE | re.MULTILINE
)


def _reporting_mta(msg: Message, texts: list[str]) -> str | None:
    """The host that wrote the report: its `Reporting-MTA`, else the domain of the bounce's sender."""
    for text in texts:
        match = _REPORTING_MTA_RE.search(text)
        if match:
            return match.group(1).lower()[:253]
    sender = prose.own_addresses_of(msg, "From")
    return sender.rpartition("@")[2] or None if sender else None


def _from_ses(ses: dict) -> BounceReport:
    if ses["kind"] != "bounce":
        kind = ses["kind"]
        reason = R.COMPLAINT if kind == "complaint" else R.NOT_A_BOUNCE
        return _report(kind, [Failure(a, kind, reason) for a in ses["recipients"]], None, reason=reason)
    entries = [
        Failure(address, R.kind_of(reason), reason, status, diagnostic)  # type: ignore[arg-type]
        for address, reason, status, diagnostic in ses["entries"]
    ]
    return _report(_winner(entries), entries, None)


def _classify_prose(msg: Message, text: str, original: Message | None, exclude: set[str]) -> BounceReport:
    subject = _h(msg, "Subject")
    from_system = _looks_like_bounce(msg)
    if not from_system and _is_auto_reply(msg):
        return BounceReport(kind="auto_reply", reason=R.AUTO_REPLY, diagnostic=_clean(subject))
    failures = prose.prose_failures(msg, text=text, exclude=exclude)
    if not failures:
        return BounceReport(kind="not_a_bounce")
    if not from_system and not re.search(r"\b[45]\d\d\b|\b[45]\.\d+\.\d+\b", text):
        return BounceReport(kind="not_a_bounce")
    if prose.is_warning(text, subject):
        entries = [
            Failure(f.recipient, "delayed", R.DELAYED, R.find_status(f.diagnostic), f.diagnostic)
            for f in failures
        ]
        return _report("delayed", entries, original)
    entries = []
    for failure in failures:
        entry = _failure(failure.recipient, R.find_status(failure.diagnostic), failure.diagnostic)
        if entry.reason == R.OTHER:
            whole = _failure(failure.recipient, R.find_status(text), " ".join(text.split())[:4000])
            entry = Failure(
                entry.address, whole.kind, whole.reason, whole.status or entry.status, entry.diagnostic
            )
        entries.append(entry)
    return _report(_winner(entries), entries, original)


def _is_auto_reply(msg: Message) -> bool:
    auto_submitted = (_h(msg, "Auto-Submitted") or "").strip().lower()
    if auto_submitted and auto_submitted != "no":
        return True
    if _h(msg, "X-Autoreply") or _h(msg, "X-Autorespond") or _h(msg, "X-Autoresponder"):
        return True
    if (_h(msg, "Precedence") or "").strip().lower() == "auto_reply":
        return True
    subject = str(_h(msg, "Subject") or "")
    if _AUTO_SUBJECT_RE.search(subject):
        return True
    if any(_h(msg, h) for h in _CHALLENGE_HEADERS):
        return True
    return bool(_CHALLENGE_SUBJECT_RE.search(subject))


def _looks_like_bounce(msg: Message) -> bool:
    """Sent by a mail system about a delivery (Exim and qmail bounces also say `Auto-Submitted`)."""
    return bool(
        _DAEMON_RE.search(str(_h(msg, "From") or ""))
        or _BOUNCE_SUBJECT_RE.search(str(_h(msg, "Subject") or ""))
    )
