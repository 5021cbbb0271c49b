"""Resuming a message parked in `awaiting_clarification` (AGT-18): the owner's answers, or the timeout.

Both go `awaiting_clarification → drafting` through the lifecycle and schedule the draft step with the briefing
the clarify step worked from plus the questions and answers. A timeout (the message's agent configuration
`clarification_timeout_ms`, default 24 h; swept every 30 minutes) drafts a guess and sets
`is_auto_send_blocked`, so it is never auto-sent."""

from __future__ import annotations

import datetime as dt
from typing import Any

from django.db import transaction
from django.utils import timezone

from inbox.lifecycle import message_transition_locked
from inbox.models import ActionStatus, AgentAction, AgentConfig, InboundMessage, StepKind
from inbox.models import ProcessingStatus as P
from owlat.lifecycle import Outcome

MESSAGES = {
    "message_not_found": "Message not found",
    "not_awaiting": "Message is not waiting for clarification",
    "missing_answers": "Answer every question (one answer per question)",
}


def _refuse(reason: str, m: InboundMessage | None = None) -> Outcome:
    return Outcome(
        ok=False,
        reason=reason,
        message=MESSAGES[reason],
        from_state=m.processing_status if m else None,
        object_id=m.pk if m else None,
        obj=m,
    )


def questions_of(m: InboundMessage) -> list[dict[str, Any]]:
    return list((m.draft_options or {}).get("questions") or [])


def _resume(m: InboundMessage, *, answers: list[str], timeout: bool, actor: str, audit: str) -> Outcome:
    from inbox.walker import schedule_step

    clarify = (
        AgentAction.objects.filter(
            inbound_message_id=m.pk, action_type=StepKind.CLARIFY, status=ActionStatus.COMPLETED
        )
        .order_by("-created_at")
        .first()
    )
    step_input = dict(clarify.input or {}) if clarify else {}
    classification = m.classification or step_input.get("classification") or {}
    questions = questions_of(m)
    outcome = message_transition_locked(
        m,
        P.DRAFTING,
        actor=actor,
        input={
            "classification": classification,
            "questions": questions,
            "answers": answers,
            "clarification_timeout": timeout,
            "audit": audit,
        },
    )
    if outcome.ok:
        schedule_step(
            m,
            StepKind.DRAFT,
            {
                "briefing": step_input.get("briefing", ""),
                "classification": classification,
                "questions": questions,
                "answers": answers,
                "clarification_timeout": timeout,
            },
        )
    return outcome


def message_clarify(*, message_id: Any, organization_id: Any, actor: str, answers: list[str]) -> Outcome:
    """The owner answers the questions (one answer each, in order): the agent drafts with them."""
    with transaction.atomic():
        qs = InboundMessage.objects.select_for_update().filter(pk=message_id)
        if organization_id is not None:
            qs = qs.filter(organization_id=organization_id)
        m = qs.first()
        if m is None:
            return _refuse("message_not_found")
        if m.processing_status != P.AWAITING_CLARIFICATION:
            return _refuse("not_awaiting", m)
        answers = [str(a).strip() for a in answers]
        if len(answers) != len(questions_of(m)) or not all(answers):
            return _refuse("missing_answers", m)
        return _resume(m, answers=answers, timeout=False, actor=actor, audit="inbound.clarified")


def clarification_timeouts_resume(*, now: dt.datetime | None = None, batch: int = 100) -> int:
    """The 30-minute cron: messages whose questions stayed unanswered past their organization's timeout."""
    now = now or timezone.now()
    waiting = list(
        InboundMessage.objects.filter(processing_status=P.AWAITING_CLARIFICATION)
        .order_by("updated_at")
        .values_list("pk", "organization_id", "draft_options")[: batch * 5]
    )
    timeouts = dict(
        AgentConfig.objects.filter(organization_id__in={org for _, org, _ in waiting}).values_list(
            "organization_id", "clarification_timeout_ms"
        )
    )
    done = 0
    for pk, org, options in waiting:
        asked = (options or {}).get("askedAt")
        limit = dt.timedelta(milliseconds=timeouts.get(org, 24 * 3600 * 1000))
        if asked and dt.datetime.fromisoformat(asked) + limit > now:
            continue
        with transaction.atomic():
            m = InboundMessage.objects.select_for_update().filter(pk=pk, organization_id=org).first()
            if m is None or m.processing_status != P.AWAITING_CLARIFICATION:
                continue
            done += int(
                _resume(m, answers=[], timeout=True, actor="system:clarification_timeout", audit="").ok
            )
        if done >= batch:
            break
    return done
