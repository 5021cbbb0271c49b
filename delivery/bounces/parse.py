"""What a message received by the bounce intake says (no database access).

Order of the checks, most authoritative first:

1. RFC 5965 ARF (`multipart/report; report-type=feedback-report`, a `message/feedback-report` part) → `complaint`
   (`Feedback-Type: not-spam` is not one);
2. RFC 3464 DSN (a `message/delivery-status` part), read per recipient block: `Action: failed` with a 5.x.x
   status → `hard`; with a 4.x.x status, or 5.2.2 (mailbox full, which clears by itself) → `soft`;
   `delayed` only → `delayed` (a warning: the MTA is still trying); `delivered`/`relayed`/`expanded` only →
   `not_a_bounce` (a positive DSN);
3. unless it comes from a mail system (MAILER-DAEMON, postmaster, "Undelivered Mail…"), auto-replies (RFC 3834 `Auto-Submitted`, `X-Autoreply`/`X-Autorespond`, `Precedence: auto_reply`, the
   usual out-of-office subjects) and challenge-response messages (sender-verification requests) → `auto_reply`,
   ignored;
4. non-standard bounces (Exim, qmail, Postfix and Exchange prose bounces, …) through flufl.bounce's detectors:
   permanent → `hard`, temporary → `soft`;
5. anything else → `not_a_bounce`.
"""

from __future__ import annotations

import email
import email.policy
import logging
import re
from dataclasses import dataclass
from email.message import Message
from email.parser import HeaderParser
from email.utils import collapse_rfc2231_value
from typing import Literal

from flufl.bounce import all_failures

logger = logging.getLogger(__name__)

Kind = Literal["hard", "soft", "complaint", "delayed", "auto_reply", "not_a_bounce"]
SOFT_PERMANENT_STATUSES = frozenset({"5.2.2"})  # mailbox full
_STATUS_RE = re.compile(r"\b([245])\.(\d{1,3})\.(\d{1,3})\b")
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
    r"(undeliver|undelivered|delivery (status notification|failure|has failed)|mail delivery failed|"
    r"returned mail|failure notice|could not be delivered|delivery problem|non[- ]?delivery)",
    re.IGNORECASE,
)
_DAEMON_RE = re.compile(r"(mailer-daemon|postmaster|mail delivery (sub)?system)", re.IGNORECASE)
_CHALLENGE_HEADERS = ("X-Boxbe-Challenge", "X-Spamarrest-Noauth", "X-Challenge", "X-Bluebottle-Request")


@dataclass(frozen=True)
class BounceReport:
    kind: Kind
    recipients: tuple[str, ...] = ()
    status: str | None = None
    diagnostic: str | None = None
    feedback_type: str | None = None
    # The original message's headers, when the report carries them (DSN part 3, ARF part 3).
    original_message_id: str | None = None
    original_return_path: str | None = None
    original_to: str | None = None

    @property
    def is_bounce(self) -> bool:
        return self.kind in ("hard", "soft")

    @property
    def summary(self) -> str:
        parts = [p for p in (self.status, self.diagnostic) if p]
        return " ".join(parts)[:1000] or self.kind


def message_from_bytes(raw: bytes) -> Message:
    return email.message_from_bytes(raw, policy=email.policy.compat32)


def _h(msg: Message, name: str) -> str:
    """A header as text (compat32 hands back a `Header` object for undecodable bytes)."""
    value = msg.get(name)
    return "" if value is None else str(value)


def _parts(msg: Message, content_type: str) -> list[Message]:
    return [p for p in msg.walk() if p.get_content_type() == content_type]


def _original_headers(msg: Message) -> Message | None:
    """The returned original message (message/rfc822) or its headers (text/rfc822-headers)."""
    for part in msg.walk():
        ctype = part.get_content_type()
        if ctype == "message/rfc822":
            payload = part.get_payload()
            if isinstance(payload, list) and payload:
                return payload[0]
        if ctype == "text/rfc822-headers":
            text = part.get_payload(decode=True) or b""
            return HeaderParser().parsestr(text.decode("utf-8", "replace"))
    return None


def _clean(value: object) -> str | None:
    if value is None:
        return None
    text = " ".join(str(value).split())
    return text[:998] or None


def _with_original(report: BounceReport, msg: Message) -> BounceReport:
    original = _original_headers(msg)
    if original is None:
        return report
    return BounceReport(
        kind=report.kind,
        recipients=report.recipients,
        status=report.status,
        diagnostic=report.diagnostic,
        feedback_type=report.feedback_type,
        original_message_id=_clean(_h(original, "Message-ID")),
        original_return_path=_clean(_h(original, "Return-Path")),
        original_to=_clean(_h(original, "To")),
    )


def _address(value: str | None) -> str | None:
    """`rfc822; user@example.com` → `user@example.com`."""
    if not value:
        return None
    _, _, addr = value.rpartition(";")
    addr = addr.strip().strip("<>").strip()
    return addr or None


def _feedback(msg: Message) -> BounceReport | None:
    parts = _parts(msg, "message/feedback-report")
    is_arf = msg.get_content_type() == "multipart/report" and (
        str(collapse_rfc2231_value(msg.get_param("report-type") or "")).lower() == "feedback-report"
    )
    if not parts and not is_arf:
        return None
    fields = Message()
    for part in parts:
        payload = part.get_payload()
        if isinstance(payload, list):  # the email package parses the fields as header blocks
            for block in payload:
                for key, value in block.items():
                    fields[key] = value
        else:
            for key, value in HeaderParser().parsestr(str(payload)).items():
                fields[key] = value
    feedback_type = (_h(fields, "Feedback-Type") or "abuse").strip().lower()
    recipient = _address(_h(fields, "Original-Rcpt-To"))
    kind: Kind = "not_a_bounce" if feedback_type == "not-spam" else "complaint"
    return _with_original(
        BounceReport(
            kind=kind,
            recipients=(recipient,) if recipient else (),
            feedback_type=feedback_type,
            diagnostic=f"Feedback-Type: {feedback_type}",
        ),
        msg,
    )


def _dsn(msg: Message) -> BounceReport | None:
    parts = _parts(msg, "message/delivery-status")
    if not parts:
        return None
    hard: list[tuple[str | None, str | None, str | None]] = []
    soft: list[tuple[str | None, str | None, str | None]] = []
    delayed: list[tuple[str | None, str | None, str | None]] = []
    for part in parts:
        payload = part.get_payload()
        if not isinstance(payload, list):
            blocks = [HeaderParser().parsestr(chunk) for chunk in re.split(r"\r?\n\r?\n", str(payload))]
        else:
            blocks = payload
        for block in blocks:
            action = (_h(block, "Action") or "").strip().lower()
            if not action:
                continue  # the per-message block
            recipient = _address(_h(block, "Original-Recipient")) or _address(_h(block, "Final-Recipient"))
            match = _STATUS_RE.search(_h(block, "Status") or "")
            status = ".".join(match.groups()) if match else None
            diagnostic = _clean(_h(block, "Diagnostic-Code"))
            entry = (recipient, status, diagnostic)
            if action.startswith("delayed"):
                delayed.append(entry)
            elif action.startswith(("failed", "error")):
                if status is None and diagnostic:
                    found = _STATUS_RE.search(diagnostic)
                    status = ".".join(found.groups()) if found else None
                    entry = (recipient, status, diagnostic)
                if status and (status.startswith("4.") or status in SOFT_PERMANENT_STATUSES):
                    soft.append(entry)
                else:
                    hard.append(entry)
    for kind, entries in (("hard", hard), ("soft", soft), ("delayed", delayed)):
        if entries:
            return _with_original(
                BounceReport(
                    kind=kind,  # type: ignore[arg-type]
                    recipients=tuple(r for r, _, _ in entries if r),
                    status=entries[0][1],
                    diagnostic=entries[0][2],
                ),
                msg,
            )
    return BounceReport(kind="not_a_bounce")


def _is_auto_reply(msg: Message) -> bool:
    auto_submitted = (_h(msg, "Auto-Submitted") or "").strip().lower()
    if auto_submitted and auto_submitted != "no":
        return True
    if _h(msg, "X-Autoreply") or _h(msg, "X-Autorespond") or _h(msg, "X-Autoresponder"):
        return True
    if (_h(msg, "Precedence") or "").strip().lower() == "auto_reply":
        return True
    if (_h(msg, "X-Auto-Response-Suppress") or "") and _AUTO_SUBJECT_RE.search(_h(msg, "Subject") or ""):
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


def bounce_classify(raw: bytes | Message) -> BounceReport:
    """What one received message reports (see the module docstring for the order of the checks); a message
    too malformed to read is `not_a_bounce` (acknowledged, never retried forever)."""
    try:
        return _classify(message_from_bytes(raw) if isinstance(raw, bytes) else raw)
    except Exception:
        logger.warning("unreadable message at the bounce intake; ignored", exc_info=True)
        return BounceReport(kind="not_a_bounce", diagnostic="unreadable message")


def _classify(msg: Message) -> BounceReport:
    report = _feedback(msg) or _dsn(msg)
    if report is not None:
        return report
    if not _looks_like_bounce(msg) and _is_auto_reply(msg):
        return BounceReport(kind="auto_reply", diagnostic=_clean(_h(msg, "Subject")))
    try:
        temporary, permanent = all_failures(msg)
    except Exception:  # a detector choking on a malformed message: treat it as not a bounce
        return BounceReport(kind="not_a_bounce")
    decode = [a.decode("utf-8", "replace") if isinstance(a, bytes) else str(a) for a in permanent]
    if decode:
        return _with_original(
            BounceReport(kind="hard", recipients=tuple(decode), diagnostic=_clean(_h(msg, "Subject"))), msg
        )
    decode = [a.decode("utf-8", "replace") if isinstance(a, bytes) else str(a) for a in temporary]
    if decode:
        return _with_original(
            BounceReport(kind="soft", recipients=tuple(decode), diagnostic=_clean(_h(msg, "Subject"))), msg
        )
    return BounceReport(kind="not_a_bounce")
