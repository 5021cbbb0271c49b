"""Sending approved replies (AGT-22, AGT-23): through delivery's agent-reply queue on the transactional pool."""

from __future__ import annotations

import datetime as dt
import email.utils
import html
import re
from typing import Any
from urllib.parse import urlsplit

from django.db import transaction
from django.utils import timezone

from inbox.lifecycle import message_transition, message_transition_locked
from inbox.models import InboundMessage
from inbox.models import ProcessingStatus as P
from inbox.queues import inbox_queue
from owlat.contacts import is_valid_email

SEND_TASK = "inbox.tasks.send_approved_reply_task"
STUCK_AFTER = dt.timedelta(minutes=10)
_LINK = re.compile(r"(?:https?://|www\.)[^\s<>\"')\]]+", re.IGNORECASE)


def reply_subject(message: InboundMessage) -> str:
    if message.draft_subject:
        return message.draft_subject
    if message.subject:
        return f"Re: {message.subject}"
    return "Re: your message"


def reply_html(text: str) -> str:
    return html.escape(text).replace("\r\n", "\n").replace("\n", "<br>\n")


def _allowed_link_host(host: str, domain: str) -> bool:
    host = host.lower().rstrip(".")
    return bool(domain) and (host == domain or host.endswith("." + domain))


def sanitize_links(text: str, domain: str) -> tuple[str, list[str]]:
    """AGT-22: every link in `text` whose host is not `domain` (or a subdomain of it) becomes "[link removed]";
    bare `www.` links count as links. Returns the text and the removed URLs."""
    removed: list[str] = []

    def replace(match: re.Match[str]) -> str:
        url = match.group(0).rstrip(".,;:!?")
        tail = match.group(0)[len(url) :]
        target = url if "://" in url else f"http://{url}"
        try:
            host = urlsplit(target).hostname or ""
        except ValueError:
            host = ""
        if _allowed_link_host(host, domain):
            return match.group(0)
        removed.append(url)
        return "[link removed]" + tail

    return _LINK.sub(replace, text), removed


def customer_links_removed(m: InboundMessage, body: str, own_domain: str) -> tuple[str, list[str]]:
    """Every link of `body` to a host the customer's message linked to (our own domain excepted) becomes
    "[link removed]": a reply never echoes the sender's links unless a reviewer kept them."""
    from inbox.security import message_urls

    hosts = set()
    for url in message_urls(m.text_body, m.html_body):
        try:
            host = (urlsplit(url).hostname or "").lower().rstrip(".")
        except ValueError:
            continue
        if host and not _allowed_link_host(host, own_domain):
            hosts.add(host)
    removed: list[str] = []

    def replace(match: re.Match[str]) -> str:
        url = match.group(0).rstrip(".,;:!?")
        try:
            host = (urlsplit(url if "://" in url else f"http://{url}").hostname or "").lower().rstrip(".")
        except ValueError:
            host = ""
        if host not in hosts:
            return match.group(0)
        removed.append(url)
        return "[link removed]" + match.group(0)[len(url) :]

    return (_LINK.sub(replace, body), removed) if hosts else (body, removed)


def reply_sender(m: InboundMessage) -> tuple[str, str] | None:
    """(address, name) the reply comes from: the address the customer wrote to — the first recipient of the
    message on one of the organization's verified domains, as a mailbox would answer — else the organization's
    default sender; None when neither exists."""
    from delivery.services import default_sender
    from delivery.services.senders import sender_domain_problem

    default = default_sender(m.organization_id)
    name = default.name if default else ""
    for address in m.to or []:
        address = str(address).strip().lower()
        if is_valid_email(address) and sender_domain_problem(m.organization_id, address) is None:
            return address, name
    return (default.email, name) if default else None


def reply_recipient(m: InboundMessage, *, autonomous: bool) -> str:
    """Where the reply goes: the message's `Reply-To` when it is a valid address — for an automatic reply only
    when it is on the authenticated From domain (the recipient lock) — else the From address."""
    from inbox.sender_auth import aligned

    _, reply_to = email.utils.parseaddr((m.headers or {}).get("reply-to", "") or "")
    reply_to = reply_to.strip().lower()
    if not reply_to or not is_valid_email(reply_to) or reply_to == m.from_email:
        return m.from_email
    if autonomous and not aligned(reply_to.rpartition("@")[2], m.from_email.rpartition("@")[2]):
        return m.from_email
    return reply_to


def reference_monitor(m: InboundMessage, body: str) -> tuple[str | None, str]:
    """AGT-22, autonomous sends only: re-check the recipient lock (the reply goes to the authenticated sender of
    the message, nobody else) and secrets, and sanitize links (allowed host: the organization's sender domain).
    Returns (error or None, the body to send)."""
    from delivery.services import default_sender
    from inbox.security import find_secret
    from inbox.steps.route import authenticated_sender

    if not authenticated_sender(m):
        return "Reference monitor: the reply recipient is not an authenticated sender", body
    if find_secret(body):
        return "Reference monitor: the draft contains a credential or secret", body
    sender = default_sender(m.organization_id)
    domain = sender.email.rpartition("@")[2].lower() if sender else ""
    body, _removed = sanitize_links(body, domain)
    return None, body


def _existing_reply(message: InboundMessage) -> bool:
    from delivery.models import TransactionalSend

    return (
        TransactionalSend.objects.filter(
            organization_id=message.organization_id, inbound_message_id=message.pk, kind="agent_reply"
        )
        .exclude(status="failed")
        .exists()
    )


def send_approved_reply(message_id: Any, token: str | None = None) -> str:
    """AGT-22. Idempotent: only an `approved` message whose pending send is this one, and never a second reply."""
    from delivery.services import agent_reply_queue, default_sender, delivery_configured

    with transaction.atomic():
        m = InboundMessage.objects.select_for_update().filter(pk=message_id).first()
        if m is None:
            return "message not found"
        if m.processing_status != P.APPROVED:
            return f"not approved ({m.processing_status})"
        pending = m.pending_auto_send
        if token and pending and pending.get("task_id") != token:
            return "superseded by another scheduled send"
        if _existing_reply(m):
            return "reply already queued"
        error = None
        if not (m.draft_response or "").strip():
            error = "No draft to send"
        elif not is_valid_email(m.from_email):
            error = f'Unsupported or invalid reply recipient: "{m.from_email}"'
        elif reply_sender(m) is None:
            error = "No sending identity configured — set a default sender email in organization settings."
        elif not delivery_configured():
            error = "No delivery provider configured"
        body = m.draft_response or ""
        if error is None and m.approval_source == "auto":
            error, body = reference_monitor(m, body)
        if error is None and not (m.draft_options or {}).get("keepCustomerLinks"):
            sender = default_sender(m.organization_id)
            body, _removed = customer_links_removed(
                m, body, sender.email.rpartition("@")[2].lower() if sender else ""
            )
        if error is None:
            refs = " ".join(x for x in ((m.references or "").strip(), m.message_id) if x)
            from_email, from_name = reply_sender(m) or ("", "")
            status, detail = agent_reply_queue(
                organization_id=m.organization_id,
                inbound_message_id=m.pk,
                to=reply_recipient(m, autonomous=m.approval_source == "auto"),
                from_email=from_email,
                from_name=from_name,
                subject=reply_subject(m),
                html=reply_html(body),
                text=body,
                in_reply_to=m.message_id,
                references=refs,
                contact_id=m.contact_id,
            )
            if status == "queued":
                return f"reply queued {detail}"
            error = detail or "Reply could not be queued"
        message_transition_locked(m, P.FAILED, input={"error_message": error})
        return f"failed: {error}"


def agent_reply_completed(send: Any) -> None:
    """AGT-23: the send lifecycle's terminal edge of an agent-reply row drives the message (delivery registry)."""
    if not send.inbound_message_id:
        return
    status = send.status
    if status in ("sent", "delivered", "opened", "clicked"):
        message_transition(message_id=send.inbound_message_id, to=P.SENT, actor="system:delivery")
        return
    if status == "bounced":
        error = "Delivery bounced"
    elif status == "complained":
        error = "Recipient complained about delivery"
    elif status == "failed":
        error = getattr(send, "error_message", None) or getattr(send, "error", None) or "Delivery failed"
    else:
        return
    message_transition(
        message_id=send.inbound_message_id,
        to=P.FAILED,
        actor="system:delivery",
        input={"error_message": str(error)},
    )


def stuck_approved_reconcile(*, now: dt.datetime | None = None, batch: int = 100) -> int:
    """AGT-23 cron: re-enqueue the send of messages stuck in `approved` 10 minutes past their send time."""
    from owlat.jobs import enqueue

    now = now or timezone.now()
    count = 0
    rows = InboundMessage.objects.filter(
        processing_status=P.APPROVED, processed_at__lt=now - STUCK_AFTER
    ).order_by("processed_at")[:batch]
    with transaction.atomic():
        for m in rows:
            pending = m.pending_auto_send or {}
            send_at = pending.get("send_at")
            if send_at and dt.datetime.fromisoformat(send_at) > now - STUCK_AFTER:
                continue
            if _existing_reply(m):
                continue
            enqueue(SEND_TASK, str(m.pk), pending.get("task_id"), queue=inbox_queue())
            count += 1
    return count
