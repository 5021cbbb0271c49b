"""Human review actions (AGT-25) and undo windows (AGT-26). Each writes its audit row through the lifecycle
(resource `inbound_message`); refusals come back as an `Outcome` with a reason and a message."""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.utils import timezone

from inbox.breakers import review_decision_record
from inbox.lifecycle import clamp_undo_delay_ms, message_record, message_transition_locked
from inbox.models import AgentAction, AgentConfig, InboundMessage
from inbox.models import ProcessingStatus as P
from inbox.security import content_hash
from owlat.lifecycle import Outcome

MESSAGES = {
    "no_draft": "No draft to approve",
    "not_draft_ready": "Message is not awaiting review",
    "not_quarantined": "Message is not quarantined",
    "not_failed": "Message has not failed",
    "message_not_found": "Message not found",
    "no_pending_send": "No pending send to cancel",
    "not_approved": "Message is not approved",
    "already_sent": "Reply already sent",
    "terminal": "Message is already in a terminal state",
    "illegal_edge": "Message is not in a state that allows this transition",
    "invalid_draft": "draftResponse must be a non-empty string",
}


def _refuse(reason: str, message: InboundMessage | None = None) -> Outcome:
    return Outcome(
        ok=False,
        reason=reason,
        message=MESSAGES.get(reason, reason),
        from_state=message.processing_status if message else None,
        object_id=message.pk if message else None,
        obj=message,
    )


def agent_drafted(m: InboundMessage) -> bool:
    """The draft under review came from the agent (a human's verdict on it feeds the rejection breaker)."""
    revisions = m.draft_revisions or []
    if revisions:
        return revisions[0].get("savedBy") == "agent"
    return bool((m.draft_response or "").strip())


def _lock(message_id: Any, organization_id: Any) -> InboundMessage | None:
    qs = InboundMessage.objects.select_for_update().filter(pk=message_id)
    if organization_id is not None:
        qs = qs.filter(organization_id=organization_id)
    return qs.first()


def _apply_edit(m: InboundMessage, *, draft_response: str, draft_subject: str | None, actor: str) -> None:
    now = timezone.now()
    revisions = list(m.draft_revisions or [])
    if not revisions and (m.draft_response or "").strip():
        revisions.append(
            {
                "text": m.draft_response,
                "subject": m.draft_subject,
                "savedAt": now.isoformat(),
                "savedBy": "agent",
            }
        )
    revisions.append(
        {
            "text": draft_response,
            "subject": draft_subject or m.draft_subject,
            "savedAt": now.isoformat(),
            "savedBy": actor,
        }
    )
    fields = {
        "draft_response": draft_response,
        "draft_revisions": revisions,
        "is_draft_edited": True,
        "draft_saved_at": now,
    }
    if draft_subject:
        fields["draft_subject"] = draft_subject
    message_record(m.pk, expect_status=P.DRAFT_READY, **fields)
    for key, value in fields.items():
        setattr(m, key, value)


def message_edit(
    *,
    message_id: Any,
    organization_id: Any,
    actor: str,
    draft_response: str,
    draft_subject: str | None = None,
) -> Outcome:
    if not isinstance(draft_response, str) or not draft_response.strip():
        return _refuse("invalid_draft")
    with transaction.atomic():
        m = _lock(message_id, organization_id)
        if m is None:
            return _refuse("message_not_found")
        if m.processing_status != P.DRAFT_READY:
            return _refuse("not_draft_ready", m)
        _apply_edit(m, draft_response=draft_response, draft_subject=draft_subject, actor=actor)
        from owlat.audit import audit_write

        audit_write(
            organization_id=m.organization_id,
            actor=actor,
            action="inbound.draft_edited",
            resource="inbound_message",
            resource_id=str(m.pk),
            details={"revision": len(m.draft_revisions) - 1},
        )
    return Outcome(
        ok=True, applied="recorded", from_state=P.DRAFT_READY, to_state=P.DRAFT_READY, object_id=m.pk, obj=m
    )


def message_approve(
    *,
    message_id: Any,
    organization_id: Any,
    actor: str,
    draft_response: str | None = None,
    draft_subject: str | None = None,
    keep_customer_links: bool = False,
) -> Outcome:
    """`draft_ready → approved` (source human) with the undo window; an edit given here is applied first.
    Links the customer sent that the draft repeats are removed when it is sent, unless the reviewer keeps them
    (`keep_customer_links`)."""
    with transaction.atomic():
        m = _lock(message_id, organization_id)
        if m is None:
            return _refuse("message_not_found")
        if m.processing_status != P.DRAFT_READY:
            terminal = m.processing_status in (P.SENT, P.REJECTED, P.ARCHIVED)
            return _refuse("terminal" if terminal else "illegal_edge", m)
        if draft_response is not None and draft_response.strip():
            _apply_edit(m, draft_response=draft_response, draft_subject=draft_subject, actor=actor)
        if not (m.draft_response or "").strip():
            return _refuse("no_draft", m)
        options = dict(m.draft_options or {})
        if options.get("keepCustomerLinks", False) != keep_customer_links:
            options["keepCustomerLinks"] = keep_customer_links
            InboundMessage.objects.filter(pk=m.pk).update(draft_options=options)
            m.draft_options = options
        config, _ = AgentConfig.objects.get_or_create(organization_id=m.organization_id)
        delay = clamp_undo_delay_ms(config.human_approve_undo_delay_ms, 15_000)
        outcome = message_transition_locked(
            m,
            P.APPROVED,
            actor=actor,
            input={"source": "human", "send_delay_ms": delay, "audit": "inbound.draft_approved"},
        )
        if outcome.ok and agent_drafted(m):
            review_decision_record(m.organization_id, "approved")
        return outcome


def message_reject(
    *, message_id: Any, organization_id: Any, actor: str, reason: str | None = None
) -> Outcome:
    with transaction.atomic():
        m = _lock(message_id, organization_id)
        if m is None:
            return _refuse("message_not_found")
        drafted = agent_drafted(m)
        outcome = message_transition_locked(
            m,
            P.REJECTED,
            actor=actor,
            input={"audit": "inbound.draft_rejected", "audit_details": {"reason": reason or ""}},
        )
        if outcome.ok and drafted:
            review_decision_record(m.organization_id, "rejected")  # AGT-20 `rejection_spike` breaker
        return outcome


def message_archive(*, message_id: Any, organization_id: Any, actor: str, reason: str = "manual") -> Outcome:
    with transaction.atomic():
        m = _lock(message_id, organization_id)
        if m is None:
            return _refuse("message_not_found")
        return message_transition_locked(
            m, P.ARCHIVED, actor=actor, input={"reason": reason, "audit": "inbound.archived"}
        )


def message_release(*, message_id: Any, organization_id: Any, actor: str) -> Outcome:
    """`quarantined → received`; the released content is remembered so the re-scan does not quarantine it again."""
    with transaction.atomic():
        m = _lock(message_id, organization_id)
        if m is None:
            return _refuse("message_not_found")
        if m.processing_status != P.QUARANTINED:
            return _refuse("not_quarantined", m)
        return message_transition_locked(
            m,
            P.RECEIVED,
            actor=actor,
            input={
                "source": "release_quarantine",
                "content_hash": content_hash(m.subject, m.text_body, m.html_body),
                "audit": "inbound.released",
            },
        )


def message_retry(*, message_id: Any, organization_id: Any, actor: str) -> Outcome:
    """Operator retry: reset the latest failed/abandoned action, `failed → received`."""
    with transaction.atomic():
        m = _lock(message_id, organization_id)
        if m is None:
            return _refuse("message_not_found")
        if m.processing_status != P.FAILED:
            return _refuse("not_failed", m)
        action = (
            AgentAction.objects.filter(inbound_message_id=m.pk, status__in=("failed", "abandoned"))
            .order_by("-created_at")
            .first()
        )
        payload: dict[str, Any] = {"source": "retry", "audit": "inbound.retried"}
        if action is not None:
            payload["reset_action_id"] = str(action.pk)
        return message_transition_locked(m, P.RECEIVED, actor=actor, input=payload)


def message_block_sender(*, message_id: Any, organization_id: Any, actor: str) -> Outcome:
    from owlat.suppression import suppress

    with transaction.atomic():
        m = _lock(message_id, organization_id)
        if m is None:
            return _refuse("message_not_found")
        if m.processing_status in (P.SENT, P.REJECTED, P.ARCHIVED):
            return _refuse("terminal", m)
        suppress(
            organization_id=m.organization_id,
            email=m.from_email,
            reason="manual",
            source_type="inbound_message",
            source_id=m.pk,
        )
        return message_transition_locked(
            m, P.ARCHIVED, actor=actor, input={"reason": "sender_blocked", "audit": "inbound.sender_blocked"}
        )


def pending_send_cancel(
    *, message_id: Any, reason: str = "undo", actor: str, organization_id: Any = None
) -> Outcome:
    """AGT-26: cancel a pending (delayed) send: `approved → draft_ready`. Outcomes as reasons:
    `no_pending_send`, `not_approved`, `already_sent`; `cancelled` when applied."""
    with transaction.atomic():
        m = _lock(message_id, organization_id)
        if m is None:
            return _refuse("message_not_found")
        if m.processing_status == P.SENT:
            return _refuse("already_sent", m)
        if m.processing_status != P.APPROVED:
            return _refuse("not_approved", m)
        if not m.pending_auto_send:
            return _refuse("no_pending_send", m)
        from inbox.sending import _existing_reply

        if _existing_reply(m):
            return _refuse("already_sent", m)
        return message_transition_locked(
            m,
            P.DRAFT_READY,
            actor=actor,
            input={"audit": "inbound.auto_send_cancelled", "audit_details": {"reason": reason}},
        )


def auto_sends_cancel_all(*, organization_id: Any, actor: str, reason: str = "kill_switch") -> int:
    """AGT-31: turning auto-reply off cancels every pending autonomous send (`kill_switch`); so does a circuit
    breaker tripping (`circuit_breaker`, AGT-20)."""
    ids = InboundMessage.objects.filter(
        organization_id=organization_id,
        processing_status=P.APPROVED,
        approval_source="auto",
        pending_auto_send__isnull=False,
    ).values_list("pk", flat=True)
    return sum(1 for pk in list(ids) if pending_send_cancel(message_id=pk, reason=reason, actor=actor).ok)
