"""Complaints and provider notifications: RFC 5965 ARF, Hotmail/Outlook JMRP reports, and Amazon SES/SNS JSON
notifications that arrive as mail.

- ARF (`message/feedback-report`): a complaint for every `Original-Rcpt-To` (else the quoted message's `To`);
  `Feedback-Type: not-spam` is not a complaint.
- JMRP: a multipart/mixed report with the complained-about message attached as message/rfc822 and the recipient in
  its `X-HmXmrOriginalRecipient` header, without a feedback-report part.
- SES/SNS JSON (`notificationType` / `eventType`, raw or wrapped in an SNS envelope's `Message`): `Bounce` per
  bounced recipient with its status and diagnostic (`bounceType: Transient` never hard), `Complaint` per
  complained recipient, `Delivery` and anything else not a bounce.
"""

from __future__ import annotations

import json
from email.message import Message
from email.parser import HeaderParser
from email.utils import collapse_rfc2231_value, parseaddr
from typing import Any

from delivery.bounces import reasons as R
from delivery.bounces.dsn import part_text
from delivery.bounces.prose import is_address

MAX_JSON = 200_000


def _fields(part: Message) -> Message:
    fields = Message()
    for key, value in HeaderParser().parsestr(part_text(part)).items():
        fields[key] = value
    return fields


def arf(msg: Message, original: Message | None) -> dict[str, Any] | None:
    """`{"kind", "recipients", "feedback_type"}` of an ARF report, else None."""
    parts = [p for p in msg.walk() if p.get_content_type() == "message/feedback-report"]
    is_arf = msg.get_content_type() == "multipart/report" and (
        str(collapse_rfc2231_value(msg.get_param("report-type") or "")).lower() == "feedback-report"
    )
    if not parts and not is_arf:
        return None
    feedback_type, recipients = "abuse", []
    for part in parts:
        fields = _fields(part)
        feedback_type = (str(fields.get("Feedback-Type") or feedback_type)).strip().lower()
        for value in fields.get_all("Original-Rcpt-To") or []:
            address = str(value).rpartition(";")[2].strip().strip("<>")
            if is_address(address) and address not in recipients:
                recipients.append(address)
    if not recipients and original is not None:
        address = parseaddr(str(original.get("To") or ""))[1]
        if is_address(address):
            recipients.append(address)
    kind = "not_a_bounce" if feedback_type == "not-spam" else "complaint"
    return {"kind": kind, "recipients": recipients, "feedback_type": feedback_type}


def jmrp(msg: Message) -> dict[str, Any] | None:
    """A JMRP complaint: the attached message carries `X-HmXmrOriginalRecipient`."""
    if not msg.is_multipart():
        return None
    for part in msg.walk():
        if part.get_content_type() != "message/rfc822":
            continue
        payload = part.get_payload()
        inner = payload[0] if isinstance(payload, list) and payload else None
        value = str(inner.get("X-HmXmrOriginalRecipient") or "") if inner is not None else ""
        address = parseaddr(value)[1]
        if is_address(address):
            return {"kind": "complaint", "recipients": [address], "feedback_type": "abuse"}
    return None


def _json_document(msg: Message) -> dict[str, Any] | None:
    for part in msg.walk() if msg.is_multipart() else [msg]:
        if part.get_content_maintype() not in ("text", "application"):
            continue
        text = part_text(part).strip()
        if not text.startswith("{") or len(text) > MAX_JSON:
            continue
        try:
            doc = json.loads(text)
        except ValueError:
            continue
        if (
            isinstance(doc, dict)
            and isinstance(doc.get("Message"), str)
            and doc.get("Type") == "Notification"
        ):
            try:
                doc = json.loads(doc["Message"])
            except ValueError:
                return {"notificationType": "unknown"}
        return doc if isinstance(doc, dict) else None
    return None


_SES_SUBTYPES = {
    "noemail": R.USER_UNKNOWN,
    "suppressed": R.USER_UNKNOWN,
    "onaccountsuppressionlist": R.USER_UNKNOWN,
    "mailboxfull": R.MAILBOX_FULL,
    "messagetoolarge": R.TOO_BIG,
    "contentrejected": R.SPAM_CONTENT,
    "attachmentrejected": R.SPAM_CONTENT,
}


def ses_notification(msg: Message) -> dict[str, Any] | None:
    """`{"kind", "entries": [(address, reason, status, diagnostic)]}` of a SES/SNS notification, else None."""
    doc = _json_document(msg)
    if doc is None:
        return None
    ntype = str(doc.get("notificationType") or doc.get("eventType") or "").lower()
    if not ntype:
        return None
    if ntype == "complaint":
        complaint = doc.get("complaint") or {}
        recipients = [
            str(r.get("emailAddress") or "")
            for r in complaint.get("complainedRecipients") or []
            if isinstance(r, dict)
        ]
        kind = (
            "not_a_bounce" if str(complaint.get("complaintFeedbackType") or "") == "not-spam" else "complaint"
        )
        return {"kind": kind, "recipients": [r for r in recipients if is_address(r)], "entries": []}
    if ntype != "bounce":
        return {"kind": "not_a_bounce", "recipients": [], "entries": []}
    bounce = doc.get("bounce") or {}
    permanent = str(bounce.get("bounceType") or "").lower() == "permanent"
    subtype = _SES_SUBTYPES.get(str(bounce.get("bounceSubType") or "").lower())
    entries = []
    for item in bounce.get("bouncedRecipients") or []:
        if not isinstance(item, dict) or not is_address(str(item.get("emailAddress") or "")):
            continue
        diagnostic = str(item.get("diagnosticCode") or "")[:998] or None
        status = R.find_status(str(item.get("status") or "")) or R.find_status(diagnostic)
        reason = R.classify_failure(status, diagnostic, permanent=permanent)
        if subtype and (reason == R.OTHER or not diagnostic):
            reason = subtype if permanent or subtype not in R.HARD_REASONS else R.OTHER
        entries.append((str(item["emailAddress"]), reason, status, diagnostic))
    return {"kind": "bounce", "recipients": [e[0] for e in entries], "entries": entries}
