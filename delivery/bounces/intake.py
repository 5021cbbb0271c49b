"""Applying a received bounce or complaint to its send row (DLV-12 through the send lifecycle).

Which row: the VERP address the message came to (delivery.verp; a forged or altered address resolves to
nothing and the message is ignored). Feedback-loop reports (RFC 5965) often come to a fixed address instead
(`BOUNCE_FEEDBACK_LOCAL_PARTS`): their row is the VERP return path of the original message they quote, else the
quoted `Message-ID` (it carries the row's random id) when the quoted recipient is the row's recipient.

What it applies (`send_transition`, so DLV-12's suppression and soft-bounce counting are the lifecycle's
effects), from the report's entry for the row's recipient: `hard` → bounced/hard (suppressed), `soft` →
bounced/soft (counted; suppressed at the threshold within the window), `block` → bounced/soft not counted (the
address is fine: never suppressed), `complaint` → complained (suppressed). Each applied report, delay warning
and auto-reply is kept as a `BounceRecord` (delivery.bounces.records) with its reason, status code and
diagnostic; delays and auto-replies change nothing else, and anything else is acknowledged and ignored. A repeated report answers `duplicate`. A report about a row the worker has not
recorded as sent yet is `retry_later` (the server answers 451; the reporting MTA retries).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from django.conf import settings

from delivery import verp
from delivery.bounces.parse import BounceReport, Failure, bounce_classify
from delivery.bounces.records import bounce_record
from delivery.lifecycle import SendRef, find_by_provider_message_id, model_for, send_transition

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class IntakeResult:
    """`outcome`: applied | duplicate | refused (the lifecycle said no) | retry_later (the row is still `queued`:
    answer 451) | ignored (not a bounce/complaint) | forged (a VERP-shaped address that does not verify) |
    unknown_send | not_ours (no VERP, no feedback address) | unsubscribed (mail to a `mailto:` unsubscribe
    address)."""

    outcome: str
    kind: str
    ref: SendRef | None = None
    detail: str = ""


def feedback_local_parts() -> frozenset[str]:
    return frozenset(p.lower() for p in getattr(settings, "BOUNCE_FEEDBACK_LOCAL_PARTS", []) or [])


def recipient_accepted(address: str) -> bool:
    """Whether the intake takes mail for `address`: a genuine VERP address or a feedback-loop address."""
    if verp.is_verp_candidate(address):
        return verp.parse_verp(address) is not None
    if verp.is_unsubscribe_candidate(address):
        return verp.parse_unsubscribe_address(address) is not None
    local = (address or "").strip("<> ").rpartition("@")[0].lower()
    return local in feedback_local_parts()


def _ref(parsed: tuple[str, str] | None) -> SendRef | None:
    if parsed is None:
        return None
    kind, send_id = parsed
    return SendRef(kind, send_id)  # type: ignore[arg-type]


def _bare(address: str | None) -> str:
    from email.utils import parseaddr

    return parseaddr(address or "")[1].strip().lower()


def _ref_from_original(report: BounceReport) -> SendRef | None:
    """A feedback report's row, from the message it quotes."""
    if report.original_return_path and verp.is_verp_candidate(_bare(report.original_return_path)):
        return _ref(verp.parse_verp(_bare(report.original_return_path)))
    if not report.original_message_id:
        return None
    ref = find_by_provider_message_id(report.original_message_id)
    if ref is None:
        return None
    quoted = {_bare(report.original_to), *(r.lower() for r in report.recipients)} - {""}
    recipient = (
        model_for(ref.kind)
        .objects.filter(pk=ref.id)
        .values_list("email" if ref.kind == "transactional" else "contact_email", flat=True)
        .first()
        or ""
    ).lower()
    return ref if recipient and recipient in quoted else None


def _row(ref: SendRef) -> dict[str, Any] | None:
    email_field = "email" if ref.kind == "transactional" else "contact_email"
    row = (
        model_for(ref.kind)
        .objects.filter(pk=ref.id)
        .values("organization_id", "contact_id", email_field)
        .first()
    )
    if row is not None:
        row["email"] = row.pop(email_field)
    return row


def _message(entry: Failure) -> str:
    """The send row's bounce message: the reason, then the status code and what the server said."""
    return " ".join(p for p in (f"[{entry.reason}]", entry.status, entry.diagnostic) if p)[:1000]


def _apply(ref: SendRef, report: BounceReport) -> IntakeResult:
    """Apply one report to the row it is about: the entry of the row's recipient decides (`entry_for`)."""
    row = _row(ref)
    if row is None:
        return IntakeResult("unknown_send", report.kind, ref)
    entry = report.entry_for(row["email"]) or Failure(
        None, report.kind, report.reason, report.status, report.diagnostic
    )
    kind = entry.kind
    if kind == "complaint":
        outcome = send_transition(ref, "complained", {})
    elif kind in ("hard", "soft", "block"):
        outcome = send_transition(
            ref,
            "bounced",
            {
                "bounce_type": "hard" if kind == "hard" else "soft",
                "bounce_message": _message(entry),
                "counts_toward_suppression": kind != "block",
            },
        )
    else:  # delayed, auto-reply: recorded, never counted
        _record(ref, row, entry, report, suppressed=False)
        return IntakeResult("ignored", kind, ref, report.summary)
    if outcome.ok:
        applied = "duplicate" if outcome.applied == "duplicate" else "applied"
        if applied == "applied":
            _record(ref, row, entry, report, suppressed=kind in ("hard", "complaint"))
        return IntakeResult(applied, kind, ref, _message(entry))
    if outcome.reason == "send_not_found":
        return IntakeResult("unknown_send", kind, ref)
    if _still_queued(ref, outcome):
        # The report overtook the worker's own record of the acceptance (results are written in batches):
        # the server answers 451 and the reporting MTA delivers it again minutes later.
        return IntakeResult("retry_later", kind, ref, "the send is not recorded as sent yet")
    return IntakeResult("refused", kind, ref, outcome.reason or "")


def _record(
    ref: SendRef, row: dict[str, Any], entry: Failure, report: BounceReport, *, suppressed: bool
) -> None:
    bounce_record(
        organization_id=row["organization_id"],
        send_kind=ref.kind,
        send_id=ref.id,
        contact_id=row["contact_id"],
        email=row["email"],
        kind=entry.kind,
        reason=entry.reason,
        status=entry.status,
        diagnostic=entry.diagnostic,
        reporting_mta=report.reporting_mta,
        suppressed=suppressed,
    )


def _still_queued(ref: SendRef, outcome: Any) -> bool:
    state = outcome.from_state
    if state is None:
        state = model_for(ref.kind).objects.filter(pk=ref.id).values_list("status", flat=True).first()
    return state == "queued"


def _unsubscribe(address: str, report: BounceReport) -> IntakeResult:
    """Mail to a row's `mailto:` unsubscribe address unsubscribes its contact from everything (RFC 2369; the
    content does not matter), except an auto-reply, which no person sent."""
    ref = _ref(verp.parse_unsubscribe_address(address))
    if ref is None:
        return IntakeResult("forged", report.kind, None, address)
    if report.kind == "auto_reply":
        return IntakeResult("ignored", report.kind, ref, "auto-reply to an unsubscribe address")
    from owlat.models import Contact
    from owlat.topics import contact_unsubscribe_all

    row = _row(ref)
    contact = Contact.objects.filter(pk=row["contact_id"]).first() if row and row["contact_id"] else None
    if contact is None:
        return IntakeResult("unknown_send", "unsubscribe", ref)
    contact_unsubscribe_all(
        contact=contact,
        source="mailto_unsubscribe",
        actor="system:mailto_unsubscribe",
        campaign_send_id=ref.id if ref.kind == "campaign" else None,
    )
    return IntakeResult("unsubscribed", "unsubscribe", ref)


def bounce_intake(*, rcpt_tos: Sequence[str], raw: bytes) -> list[IntakeResult]:
    """Classify one received message and apply it to the send row of each recipient it came to."""
    report = bounce_classify(raw)
    results: list[IntakeResult] = []
    for rcpt in rcpt_tos:
        address = (rcpt or "").strip().strip("<>")
        if verp.is_unsubscribe_candidate(address):
            results.append(_unsubscribe(address, report))
            continue
        if verp.is_verp_candidate(address):
            ref = _ref(verp.parse_verp(address))
            if ref is None:
                results.append(IntakeResult("forged", report.kind, None, address))
                continue
        elif address.rpartition("@")[0].lower() in feedback_local_parts():
            ref = _ref_from_original(report) if report.kind == "complaint" else None
            if ref is None:
                outcome = "ignored" if report.kind != "complaint" else "unknown_send"
                results.append(IntakeResult(outcome, report.kind, None, address))
                continue
        else:
            results.append(IntakeResult("not_ours", report.kind, None, address))
            continue
        if report.kind in ("not_a_bounce",):
            results.append(IntakeResult("ignored", report.kind, ref, report.summary))
            continue
        results.append(_apply(ref, report))
    for result in results:
        logger.info("bounce intake: %s %s %s", result.outcome, result.kind, result.ref)
    return results
