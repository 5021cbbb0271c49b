"""Thread resolution of the receive path (AGT-02 step 3, with the binding rules of the security review): a
message joins the thread its `In-Reply-To`/`References` name only when its sender takes part in that thread and
its authentication does not refute the From address; otherwise a thread of the same contact and normalized
subject, or a new one."""

from __future__ import annotations

import datetime as dt
import re
from typing import Any

from django.db.models import Q

from inbox.models import ConversationThread, InboundMessage

_SUBJECT_PREFIX = re.compile(r"^\s*((re|fw|fwd|aw|wg|sv|antw)\s*(\[\d+\])?\s*:\s*)+", re.IGNORECASE)
_MSGID = re.compile(r"<[^<>\s]+>")


def normalize_subject(subject: str) -> str:
    return re.sub(r"\s+", " ", _SUBJECT_PREFIX.sub("", subject or "")).strip().lower()[:998]


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
