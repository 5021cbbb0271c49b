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
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone

from inbox.authresults import RESULTS, AuthenticationResults, parse_authentication_results
from inbox.models import AgentConfig, InboundMessage, ProcessingStatus
from inbox.queues import inbox_queue
from inbox.sender_auth import SenderAuth, from_summary, sender_auth_of_raw
from inbox.threads import sender_refuted, thread_resolve
from owlat.contacts import contact_find_or_create, is_valid_email, normalize_email
from owlat.limits import LimitExceeded

P = ProcessingStatus
AUTH_RESULTS = RESULTS  # the API's `authentication` enum (settings' ENUM_NAME_OVERRIDES names it here)
START_TASK = "inbox.tasks.message_start_task"


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
    # `received_at` stays ours (the time of receipt): the sender's `Date:` is only a claim, kept in `headers`
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
            message = _message_create(organization_id, parsed, thread=thread, contact=contact, now=now)
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


def _message_create(
    organization_id: Any, parsed: ParsedMessage, *, thread: Any, contact: Any, now: dt.datetime
) -> InboundMessage:
    """The message row, with the sender's authentication verdict."""
    auth = parsed.authentication or {}
    verdict = parsed.sender_auth or from_summary(auth)
    return InboundMessage.objects.create(
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
