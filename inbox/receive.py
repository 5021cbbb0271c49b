"""The receive path (AGT-01 … AGT-03): MIME parsing with the standard library, contact and thread resolution,
de-duplication by Message-ID, automated-mail and suppression checks, pipeline-start limits.

Every entry point (API ingest, raw RFC 5322 endpoint, django-anymail inbound webhooks) ends in
`message_receive(...)`.
"""

from __future__ import annotations

import datetime as dt
import email
import email.policy
import email.utils
import re
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import Q
from django.utils import timezone

from inbox.authresults import RESULTS, AuthenticationResults, parse_authentication_results
from inbox.models import AgentConfig, ConversationThread, InboundMessage, ProcessingStatus
from inbox.queues import inbox_queue
from inbox.sender_auth import SenderAuth, from_summary, sender_auth_of_raw
from owlat.contacts import contact_find_or_create, is_valid_email, normalize_email
from owlat.limits import LimitExceeded

P = ProcessingStatus
AUTH_RESULTS = RESULTS  # the API's `authentication` enum (settings' ENUM_NAME_OVERRIDES names it here)
START_TASK = "inbox.tasks.message_start_task"
_SUBJECT_PREFIX = re.compile(r"^\s*((re|fw|fwd|aw|wg|sv|antw)\s*(\[\d+\])?\s*:\s*)+", re.IGNORECASE)
_MSGID = re.compile(r"<[^<>\s]+>")


class MessageTooLarge(LimitExceeded):
    """An inbound message over `INBOX_MAX_MESSAGE_BYTES` (owlat.limits)."""

    def __init__(self, size: int) -> None:
        limit = settings.INBOX_MAX_MESSAGE_BYTES
        super().__init__(
            field="Message", limit=limit, actual=size, unit="bytes", setting="INBOX_MAX_MESSAGE_BYTES"
        )
        self.size = size


class InvalidMessage(ValueError):
    """The message cannot be stored; `field` names the offending input."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


@dataclass
class ParsedMessage:
    message_id: str
    from_email: str
    from_name: str = ""
    to: list[str] = field(default_factory=list)
    subject: str = ""
    text_body: str | None = None
    html_body: str | None = None
    in_reply_to: str | None = None
    references: str | None = None
    headers: dict[str, str] = field(default_factory=dict)
    attachments: list[dict[str, Any]] = field(default_factory=list)
    #: the attachments' bytes (mail parsed by `parse_raw`): `{"filename", "contentType", "content"}` each,
    #: stored for reviewers by `inbox.attachments`; never part of `attachments` (metadata, given to the scan)
    attachment_contents: list[dict[str, Any]] = field(default_factory=list)
    authentication: dict[str, str | None] = field(default_factory=dict)
    #: the installation's MTA's results in full (mail parsed by `parse_raw`); None when a client gave them
    auth_results: AuthenticationResults | None = None
    #: DMARC-aligned authentication of the From domain (`inbox.sender_auth`); None: derived from `authentication`
    sender_auth: SenderAuth | None = None
    received_at: dt.datetime | None = None


def check_size(size: int) -> None:
    if size > settings.INBOX_MAX_MESSAGE_BYTES:
        raise MessageTooLarge(size)


def normalize_subject(subject: str) -> str:
    return re.sub(r"\s+", " ", _SUBJECT_PREFIX.sub("", subject or "")).strip().lower()[:998]


def parse_address(value: str) -> tuple[str, str]:
    """`addr` or `Name <addr>` → (name, lower-cased address); raises InvalidMessage("from") when invalid."""
    name, addr = email.utils.parseaddr(value or "")
    if not addr or not is_valid_email(addr):
        raise InvalidMessage("from", f'Unsupported or invalid sender address: "{value}"')
    return name.strip(), normalize_email(addr)


def parse_raw(raw: bytes) -> ParsedMessage:
    """RFC 5322 bytes → ParsedMessage (stdlib `email`, policy `default`); transfer encodings are decoded."""
    check_size(len(raw))
    msg = email.message_from_bytes(raw, policy=email.policy.default)
    from_name, from_email = parse_address(str(msg.get("From", "")))
    message_id = str(msg.get("Message-ID", "") or "").strip()
    if not message_id:
        raise InvalidMessage("Message-ID", "Message-ID header is required")
    to = [
        normalize_email(a) for _, a in email.utils.getaddresses([str(v) for v in msg.get_all("To", [])]) if a
    ]
    text_part = msg.get_body(preferencelist=("plain",))
    html_part = msg.get_body(preferencelist=("html",))
    attachments, contents = [], []
    for part in msg.iter_attachments():
        payload = part.get_payload(decode=True) or b""
        meta = {"filename": part.get_filename() or "", "contentType": part.get_content_type()}
        attachments.append({**meta, "size": len(payload)})
        contents.append({**meta, "content": payload})
    headers: dict[str, str] = {}
    for key, value in msg.items():
        if key.lower() not in headers:
            headers[key.lower()] = str(value)[:2000]
    parsed = ParsedMessage(
        message_id=message_id,
        from_email=from_email,
        from_name=from_name,
        to=to,
        subject=str(msg.get("Subject", "") or ""),
        text_body=_content(text_part),
        html_body=_content(html_part),
        in_reply_to=(str(msg.get("In-Reply-To")) if msg.get("In-Reply-To") else None),
        references=(str(msg.get("References")) if msg.get("References") else None),
        headers=headers,
        attachments=attachments,
        attachment_contents=contents,
    )
    results = parse_authentication_results(str(v) for v in msg.get_all("Authentication-Results", []))
    parsed.authentication, parsed.auth_results = results.summary(), results
    parsed.sender_auth = sender_auth_of_raw(raw, results, from_email)
    date = msg.get("Date")
    if date:
        try:
            parsed.received_at = email.utils.parsedate_to_datetime(str(date))
        except (TypeError, ValueError):
            parsed.received_at = None
        if parsed.received_at is not None and parsed.received_at.tzinfo is None:
            parsed.received_at = None
    return parsed


def _content(part: Any) -> str | None:
    if part is None:
        return None
    try:
        return part.get_content()
    except (LookupError, ValueError):
        payload = part.get_payload(decode=True) or b""
        return payload.decode("utf-8", "replace")


# --- automated mail (AGT-02 step 5) ---------------------------------------------------------------------


def is_automated(headers: dict[str, str], from_email: str, to: list[str]) -> str | None:
    h = {k.lower(): (v or "") for k, v in (headers or {}).items()}
    auto = h.get("auto-submitted", "").strip().lower()
    if auto and auto != "no":
        return "auto_submitted"
    if "list-id" in h:
        return "list"
    if h.get("precedence", "").strip().lower() in ("bulk", "list", "junk"):
        return "precedence"
    if "x-owlat-forwarded" in h:
        return "forwarded"
    if from_email in [normalize_email(t) for t in to]:
        return "self"
    return None


def agent_config_for(organization_id: Any) -> AgentConfig:
    config, _ = AgentConfig.objects.get_or_create(organization_id=organization_id)
    return config


def pipeline_enabled(organization_id: Any, stored_flags: dict[str, Any] | None = None) -> bool:
    """AGT-02 step 6 as amended (docs/decisions.md): `inbox` and the stored `ai.agent` must be on; `ai` is required only
    while a model is configured (without one the pipeline runs scan and context retrieval and stops at
    `draft_ready` with an empty draft). `stored_flags`: the organization's stored flags when the caller has
    them loaded already (else they are read)."""
    from inbox.llm import llm_configured
    from owlat.flags import resolve_flags
    from owlat.models import OrganizationSettings

    if stored_flags is not None:
        stored = stored_flags
    else:
        stored = (
            OrganizationSettings.objects.filter(organization_id=organization_id)
            .values_list("feature_flags", flat=True)
            .first()
        ) or {}
    effective = resolve_flags(stored, organization_id)  # `ai` counts the organization's own provider too
    if not effective["inbox"] or not stored.get("ai.agent", True):
        return False
    if llm_configured(organization_id):
        return effective["ai.agent"]
    return True


def _start_allowed(organization_id: Any, sender: str) -> bool:
    """AGT-02 step 7: token buckets on pipeline starts (per sender, global); 0 rates lift them (D-17)."""
    from owlat.ratelimit import take_token

    per_rate = settings.INBOX_START_RATE_PER_SENDER / 60.0
    glob_rate = settings.INBOX_START_RATE_GLOBAL / 60.0
    if not take_token(
        f"inbox:start:{organization_id}:{sender}",
        rate=per_rate,
        capacity=settings.INBOX_START_BURST_PER_SENDER,
    ).allowed:
        return False
    return take_token(
        f"inbox:start:{organization_id}", rate=glob_rate, capacity=settings.INBOX_START_BURST_GLOBAL
    ).allowed


#: at most this many referenced Message-IDs are looked up (In-Reply-To first, then the newest References)
MAX_REFERENCED_IDS = 50


def _message_ids(value: str | None) -> list[str]:
    return _MSGID.findall(value or "")


def sender_refuted(authentication: dict[str, str | None] | None) -> bool:
    """True when the (trusted) authentication results say the From address is forged: DMARC failed, or without
    a DMARC result SPF or DKIM failed and neither passed. Absent results refute nothing (they prove nothing
    either: such mail is never auto-sent, and its reply goes to the From address, not to whoever forged it)."""
    auth = authentication or {}
    if auth.get("dmarc") == "fail":
        return True
    if auth.get("dmarc") is None:
        results = {auth.get("spf"), auth.get("dkim")}
        return "fail" in results and "pass" not in results
    return False


def thread_participant(*, thread_id: Any, contact_id: Any, sender: str) -> bool:
    """The sender takes part in the thread: it is the thread's contact, or the sender of one of its messages."""
    return (
        ConversationThread.objects.filter(pk=thread_id)
        .filter(Q(contact_id=contact_id) | Q(messages__from_email=sender))
        .exists()
    )


def _referenced_threads(organization_id: Any, ids: list[str]) -> list[tuple[Any, Any]]:
    """(thread id, its contact id) of the referenced messages — stored inbound mail, else our sent replies — in
    reference order, each thread once."""
    from delivery.models import TransactionalSend

    found = {
        mid: (thread_id, contact_id)
        for mid, thread_id, contact_id in InboundMessage.objects.filter(
            organization_id=organization_id, message_id__in=ids, thread__isnull=False
        ).values_list("message_id", "thread_id", "thread__contact_id")
    }
    missing = [i for i in ids if i not in found]
    if missing:
        replied_to = dict(
            TransactionalSend.objects.filter(
                organization_id=organization_id,
                kind="agent_reply",
                message_id__in=missing + [i.strip("<>") for i in missing],
                inbound_message_id__isnull=False,
            ).values_list("message_id", "inbound_message_id")
        )
        if replied_to:
            thread_of = {
                pk: (thread_id, contact_id)
                for pk, thread_id, contact_id in InboundMessage.objects.filter(
                    organization_id=organization_id, pk__in=set(replied_to.values()), thread__isnull=False
                ).values_list("pk", "thread_id", "thread__contact_id")
            }
            for mid in missing:
                inbound = replied_to.get(mid) or replied_to.get(mid.strip("<>"))
                if inbound in thread_of:
                    found[mid] = thread_of[inbound]
    threads: list[tuple[Any, Any]] = []
    for mid in ids:
        if mid in found and found[mid] not in threads:
            threads.append(found[mid])
    return threads


def thread_resolve(
    *,
    organization_id: Any,
    contact_id: Any,
    sender: str,
    subject: str,
    in_reply_to: str | None,
    references: str | None,
    at: dt.datetime,
    refuted: bool = False,
) -> ConversationThread:
    """AGT-03: a message joins a thread only when its sender takes part in it (`thread_participant`): the thread
    of a message it references (In-Reply-To/References, stored mail or our replies), else the sender's own thread
    with the same normalized subject; otherwise it starts a new thread. A stranger naming another customer's
    Message-ID therefore starts a thread of their own, and a sender whose authentication refutes the From
    address (`refuted`, see `sender_refuted`) always does. Every way in (API, raw, webhooks) binds here."""
    if not refuted:
        ids = (_message_ids(in_reply_to) + list(reversed(_message_ids(references))))[:MAX_REFERENCED_IDS]
        for thread_id, thread_contact_id in _referenced_threads(organization_id, ids) if ids else []:
            if thread_contact_id == contact_id or thread_participant(
                thread_id=thread_id, contact_id=contact_id, sender=sender
            ):
                ConversationThread.objects.filter(pk=thread_id).update(last_message_at=at)
                return ConversationThread.objects.get(pk=thread_id)
    normalized = normalize_subject(subject)
    thread = None
    if not refuted:
        thread = (
            ConversationThread.objects.filter(
                organization_id=organization_id, contact_id=contact_id, normalized_subject=normalized
            )
            .order_by("-created_at")
            .first()
        )
    if thread is not None:
        ConversationThread.objects.filter(pk=thread.pk).update(last_message_at=at)
        return thread
    return ConversationThread.objects.create(
        organization_id=organization_id,
        contact_id=None if refuted else contact_id,  # not the contact's thread: the From address is forged
        subject=subject[:998],
        normalized_subject=normalized,
        last_message_at=at,
    )


@dataclass(frozen=True)
class Received:
    message: InboundMessage
    created: bool
    pipeline: str  # started | duplicate | blocked | automated | disabled | rate_limited


def message_receive(
    *, organization_id: Any, parsed: ParsedMessage, actor: str = "system:inbound"
) -> Received:
    """AGT-02 in one transaction. A repeated Message-ID for the organization returns the stored message."""
    from owlat.activities import activity_record

    if not parsed.message_id.strip():
        raise InvalidMessage("messageId", "messageId is required")
    if len(parsed.message_id) > 998:
        raise InvalidMessage("messageId", "messageId is too long")
    size = sum(len((x or "").encode()) for x in (parsed.text_body, parsed.html_body, parsed.subject))
    check_size(size)
    existing = InboundMessage.objects.filter(
        organization_id=organization_id, message_id=parsed.message_id
    ).first()
    if existing is not None:
        return Received(existing, False, "duplicate")
    now = timezone.now()
    try:
        with transaction.atomic():
            contact, created = contact_find_or_create(
                organization_id=organization_id,
                email=parsed.from_email,
                source="inbound",
                actor=actor,
                first_name=(parsed.from_name.split(" ")[0] if parsed.from_name else None) or None,
                fire=False,
            )
            if created:
                _correspondent_recorded(contact, actor=actor)
            thread = thread_resolve(
                organization_id=organization_id,
                contact_id=contact.pk,
                sender=parsed.from_email,
                subject=parsed.subject,
                in_reply_to=parsed.in_reply_to,
                references=parsed.references,
                at=now,
                refuted=sender_refuted(parsed.authentication),
            )
            auth = parsed.authentication or {}
            verdict = parsed.sender_auth or from_summary(auth)
            message = InboundMessage.objects.create(
                organization_id=organization_id,
                message_id=parsed.message_id,
                from_email=parsed.from_email,
                from_name=parsed.from_name[:200],
                to=parsed.to,
                subject=parsed.subject[:998],
                text_body=parsed.text_body,
                html_body=parsed.html_body,
                in_reply_to=parsed.in_reply_to,
                references=parsed.references,
                headers=parsed.headers or None,
                attachment_meta=parsed.attachments or None,
                spf_result=auth.get("spf"),
                dkim_result=auth.get("dkim"),
                dmarc_result=auth.get("dmarc"),
                sender_authenticated=verdict.authenticated,
                sender_auth_detail=verdict.detail[:200],
                thread=thread,
                contact=contact,
                received_at=parsed.received_at or now,
            )
            activity_record(
                organization_id=organization_id,
                contact_id=contact.pk,
                activity_type="inbound_received",
                metadata={"inboundMessageId": str(message.pk), "subject": parsed.subject[:200]},
            )
            if parsed.attachment_contents:
                from inbox.attachments import attachments_store

                attachments_store(message, parsed.attachment_contents)
            _cancel_pending_on_thread(message, now)
            pipeline = _after_insert(message, now)
    except IntegrityError:
        existing = InboundMessage.objects.filter(
            organization_id=organization_id, message_id=parsed.message_id
        ).first()
        if existing is None:
            raise
        return Received(existing, False, "duplicate")
    if pipeline == "blocked" or message.processing_status != P.RECEIVED:
        message.refresh_from_db()
    return Received(message, True, pipeline)


def _correspondent_recorded(contact: Any, *, actor: str) -> None:
    """A new sender is an inbox correspondent, not a marketing contact (AGT-02 as docs/decisions.md amends it):
    its creation is audited, but no `contact_created` trigger (a welcome automation would mail spammers and
    phishers), no `contact.created` webhook and no analytics event; it is subscribed to nothing."""
    from owlat.audit import audit_write

    audit_write(
        organization_id=contact.organization_id,
        actor=actor,
        action="contact.created",
        resource="contact",
        resource_id=str(contact.pk),
        details={"source": contact.source, "correspondent": True},
    )


def _after_insert(message: InboundMessage, now: dt.datetime) -> str:
    from inbox.lifecycle import message_transition_locked
    from owlat.jobs import enqueue
    from owlat.suppression import is_suppressed

    if is_suppressed(
        organization_id=message.organization_id, email=message.from_email, scope="transactional"
    ):
        message_transition_locked(message, P.ARCHIVED, input={"reason": "sender_blocked"}, at=now)
        return "blocked"
    if is_automated(message.headers or {}, message.from_email, message.to or []):
        return "automated"
    if not pipeline_enabled(message.organization_id):
        return "disabled"
    if not _start_allowed(message.organization_id, message.from_email):
        return "rate_limited"
    window_ms = agent_config_for(message.organization_id).coalesce_window_ms
    if window_ms > 0 and message.thread_id is not None:
        _coalesce(message, now, window_ms)
        enqueue(
            START_TASK, str(message.pk), at=now + dt.timedelta(milliseconds=window_ms), queue=inbox_queue()
        )
        return "started"
    enqueue(START_TASK, str(message.pk), queue=inbox_queue())
    return "started"


def _coalesce(message: InboundMessage, now: dt.datetime, window_ms: int) -> None:
    """AGT-02 burst coalescing: the start of a message waits `coalesce_window_ms`; a newer message on the same
    thread inside that window supersedes the ones still waiting (→ `archived` reason `coalesced`), so a burst
    produces one run — the newest message's, whose context retrieval carries the thread history."""
    from inbox.lifecycle import message_transition_locked

    waiting = (
        InboundMessage.objects.select_for_update()
        .filter(
            organization_id=message.organization_id,
            thread_id=message.thread_id,
            processing_status=P.RECEIVED,
            updated_at__gte=now - dt.timedelta(milliseconds=window_ms),
        )
        .exclude(pk=message.pk)
    )
    for other in waiting:
        message_transition_locked(
            other, P.ARCHIVED, input={"reason": "coalesced", "coalesced_into": str(message.pk)}, at=now
        )


def _cancel_pending_on_thread(message: InboundMessage, now: dt.datetime) -> None:
    """AGT-26: an incoming reply on the thread cancels a pending (delayed) send of that thread."""
    if message.thread_id is None:
        return
    from inbox.review import pending_send_cancel

    pending = InboundMessage.objects.filter(
        thread_id=message.thread_id, processing_status=P.APPROVED, pending_auto_send__isnull=False
    ).exclude(pk=message.pk)
    for other_id in pending.values_list("pk", flat=True):
        pending_send_cancel(message_id=other_id, reason="thread_reply", actor="system:inbound")
