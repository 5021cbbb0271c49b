"""The only writer of `InboundMessage.processing_status` (AGT-04 … AGT-08).

`message_transition(message_id=…, to=…, input=…)`: `InboxLifecycle` on the kernel's runner (D-04) with the pure
reducer `message_reduce`; it also writes the companion fields patched with the status (AGT-07), the running
step's action completion/failure (`inbox.lifecycle.actions`) and the thread's `latest_draft_status` (AGT-08
effects). `message_record` writes companion fields without a status change.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from typing import Any

from django.utils import timezone

from inbox import sql
from inbox.lifecycle import sql as lifecycle_sql
from inbox.lifecycle.actions import action_complete, action_fail, action_reset
from inbox.models import (
    TERMINAL,
    AgentConfig,
    ConversationThread,
    DraftStatus,
    InboundMessage,
    ProcessingStatus,
)
from inbox.queues import inbox_queue
from owlat.lifecycle import Audit, Call, Decision, Enqueue, Lifecycle, Outcome, legal_edges

P = ProcessingStatus
SEND_TASK = "inbox.tasks.send_approved_reply_task"
START_TASK = "inbox.tasks.message_start_task"

#: AGT-05, read from the django-fsm declaration on the model.
LEGAL_EDGES: frozenset[tuple[str, str]] = legal_edges(InboundMessage, "processing_status")
TERMINAL_STATES = frozenset(str(s) for s in TERMINAL)

MESSAGES = {
    "message_not_found": "Message not found",
    "illegal_edge": "Message is not in a state that allows this transition",
    "terminal": "Message is already in a terminal state",
}

#: AGT-07: → these targets set `processed_at`.
_PROCESSED_TARGETS = {P.APPROVED, P.SENT, P.REJECTED, P.ARCHIVED, P.FAILED}
_THREAD_DRAFT_STATUS = {
    P.DRAFT_READY: DraftStatus.PENDING,
    P.APPROVED: DraftStatus.APPROVED,
    P.SENT: DraftStatus.SENT,
    P.REJECTED: DraftStatus.REJECTED,
}
_DRAFT_KEYS = ("draft_response", "draft_subject", "draft_options", "draft_quality")


def clamp_undo_delay_ms(value: int | None, default: int) -> int:
    """AGT-26: the human undo delay is clamped to 0–120 000 ms."""
    return max(0, min(120_000, default if value is None else int(value)))


def send_token(message_id: Any, at: dt.datetime) -> str:
    """A stable id for one scheduled send: the task carries it, undo/cancel clears it on the message."""
    return f"{message_id}:{at.isoformat()}"


def message_reduce(*, message_id: str, frm: str, to: str, input: dict[str, Any], at: dt.datetime) -> Decision:
    """Pure reducer of AGT-05 … AGT-08."""
    if frm in TERMINAL_STATES:
        return Decision.refuse("terminal")
    if (frm, to) not in LEGAL_EDGES:
        return Decision.refuse("illegal_edge")
    patch: dict[str, Any] = {"processing_status": to}
    effects: list[Any] = []
    if to in _PROCESSED_TARGETS:
        patch["processed_at"] = at
    if frm == P.APPROVED:
        patch["pending_auto_send"] = None
    target = _TARGET_PATCHES.get(to)
    if target is not None:
        target(patch, effects, message_id=message_id, frm=frm, input=input, at=at)
    if "agent_decision" in input:
        patch["agent_decision"] = input["agent_decision"]
    effects += _action_effects(to, input, patch, at)
    if to in _THREAD_DRAFT_STATUS:
        effects.append(Call("thread_draft_status", {"status": str(_THREAD_DRAFT_STATUS[to])}))
    if input.get("audit"):
        details = {"previousStatus": frm, "newStatus": to, **(input.get("audit_details") or {})}
        effects.append(Audit(input["audit"], details))
    return Decision.accept(patch, effects=effects)


# --- what each target writes besides the status (AGT-07, AGT-08); pure, like the reducer ---------------------


def _to_classifying(patch: dict[str, Any], effects: list[Any], *, input: dict[str, Any], **_: Any) -> None:
    patch["security_flags"] = input.get("security_flags")
    patch["context_tier"] = input.get("context_tier")


def _to_quarantined(patch: dict[str, Any], effects: list[Any], *, input: dict[str, Any], **_: Any) -> None:
    patch["security_flags"] = input.get("security_flags")


def _to_drafting(
    patch: dict[str, Any], effects: list[Any], *, frm: str, input: dict[str, Any], **_: Any
) -> None:
    classification = input.get("classification") or {}
    patch["classification"] = classification
    patch["confidence_score"] = classification.get("confidence")
    if frm == P.AWAITING_CLARIFICATION:  # AGT-18 resume: the owner's answers, or the timeout's guess
        patch["draft_options"] = {
            "questions": input.get("questions") or [],
            "answers": input.get("answers") or [],
            "clarificationTimedOut": bool(input.get("clarification_timeout")),
        }
        if input.get("clarification_timeout"):
            patch["is_auto_send_blocked"] = True


def _to_awaiting_clarification(
    patch: dict[str, Any], effects: list[Any], *, input: dict[str, Any], at: dt.datetime, **_: Any
) -> None:
    patch["classification"] = input.get("classification")
    patch["confidence_score"] = (input.get("classification") or {}).get("confidence")
    patch["draft_options"] = {"questions": input.get("questions") or [], "askedAt": at.isoformat()}


def _to_draft_ready(patch: dict[str, Any], effects: list[Any], *, input: dict[str, Any], **_: Any) -> None:
    if "classification" in input:
        patch["classification"] = input["classification"]
        patch["confidence_score"] = (input["classification"] or {}).get("confidence")
    for key in _DRAFT_KEYS:
        if key in input:
            patch[key] = input[key]
    if "confidence_score" in input:
        patch["confidence_score"] = input["confidence_score"]
    if "agent_note" in input:
        patch["agent_note"] = input["agent_note"]


def _to_archived(patch: dict[str, Any], effects: list[Any], *, input: dict[str, Any], **_: Any) -> None:
    if "security_flags" in input:
        patch["security_flags"] = input["security_flags"]
    patch["archive_reason"] = input.get("reason")


def _to_failed(patch: dict[str, Any], effects: list[Any], *, input: dict[str, Any], **_: Any) -> None:
    patch["error_message"] = input.get("error_message") or "Pipeline error"


def _to_received(
    patch: dict[str, Any], effects: list[Any], *, message_id: str, input: dict[str, Any], **_: Any
) -> None:
    patch["error_message"] = None
    if input.get("source") == "release_quarantine":
        patch["security_flags"] = None
        patch["released_content_hash"] = input.get("content_hash")
        patch["is_auto_send_blocked"] = True  # AGT-14: a released message is never auto-sent
    effects.append(Enqueue(START_TASK, (message_id,), queue=inbox_queue()))
    if input.get("reset_action_id"):
        effects.append(Call("reset_action", {"action_id": input["reset_action_id"]}))


def _to_approved(
    patch: dict[str, Any],
    effects: list[Any],
    *,
    message_id: str,
    input: dict[str, Any],
    at: dt.datetime,
    **_: Any,
) -> None:
    source = input.get("source") or "human"
    patch["approval_source"] = source
    delay_ms = int(input.get("send_delay_ms") or 0)
    token = send_token(message_id, at)
    send_at = at + dt.timedelta(milliseconds=delay_ms)
    if delay_ms > 0:
        patch["pending_auto_send"] = {
            "task_id": token,
            "send_at": send_at.isoformat(),
            "scheduled_at": at.isoformat(),
        }
        effects.append(Enqueue(SEND_TASK, (message_id, token), at=send_at, queue=inbox_queue()))
    else:
        effects.append(Enqueue(SEND_TASK, (message_id, token), queue=inbox_queue()))
    if source == "auto":
        effects.append(Call("increment_auto_reply", {"at": at}))


_TARGET_PATCHES: dict[str, Callable[..., None]] = {
    P.CLASSIFYING: _to_classifying,
    P.QUARANTINED: _to_quarantined,
    P.DRAFTING: _to_drafting,
    P.AWAITING_CLARIFICATION: _to_awaiting_clarification,
    P.DRAFT_READY: _to_draft_ready,
    P.ARCHIVED: _to_archived,
    P.FAILED: _to_failed,
    P.RECEIVED: _to_received,
    P.APPROVED: _to_approved,
}


def _action_effects(to: str, input: dict[str, Any], patch: dict[str, Any], at: dt.datetime) -> list[Any]:
    """The running step's action completed with the transition, or failed with it (→ failed)."""
    if input.get("action_id") and to != P.FAILED:
        completion = {
            "action_id": input["action_id"],
            "output": input.get("output"),
            "duration_ms": input.get("duration_ms"),
            "model_used": input.get("model_used"),
            "token_usage": input.get("token_usage"),
            "at": at,
        }
        return [Call("complete_action", completion)]
    if to == P.FAILED and input.get("failing_action_id"):
        failure = {"action_id": input["failing_action_id"], "error": patch["error_message"], "at": at}
        return [Call("fail_action", failure)]
    return []


class InboxLifecycle(Lifecycle):
    model = InboundMessage
    field = "processing_status"
    resource = "inbound_message"
    not_found_reason = "message_not_found"
    messages = MESSAGES
    self_loop = "reducer"  # AGT-05: self-transitions are illegal_edge unless listed
    writes_audit = True

    def reduce(
        self, obj: InboundMessage, frm: str, to: str, *, input: dict[str, Any], actor: str, at: dt.datetime
    ) -> Decision:
        return message_reduce(message_id=str(obj.pk), frm=frm, to=to, input=input, at=at)

    def effect_handlers(self) -> dict[str, Callable[..., None]]:
        return {
            "complete_action": _effect_complete_action,
            "fail_action": _effect_fail_action,
            "reset_action": _effect_reset_action,
            "thread_draft_status": _effect_thread_draft_status,
            "increment_auto_reply": _effect_increment_auto_reply,
        }


def message_transition(
    *,
    message_id: Any,
    to: str,
    actor: str = "system:inbox",
    input: dict[str, Any] | None = None,
    at: dt.datetime | None = None,
    organization_id: Any = None,
) -> Outcome:
    """AGT-06: the single writer of `processing_status` and its companions. Never raises for business outcomes."""
    return InboxLifecycle().transition(
        message_id, to, actor=actor, at=at, input=input, organization_id=organization_id
    )


def message_transition_locked(
    message: InboundMessage, to: str, *, actor: str = "system:inbox", input: dict | None = None, at=None
) -> Outcome:
    """Like `message_transition` on a row the caller locked in its own transaction."""
    return InboxLifecycle().transition_locked(message, to, actor=actor, at=at, input=input)


# --- effects -----------------------------------------------------------------------------------------------


def _effect_complete_action(message: InboundMessage, **kwargs: Any) -> None:
    action_complete(kwargs.pop("action_id"), **kwargs)


def _effect_fail_action(message: InboundMessage, *, action_id: Any, error: str, at: dt.datetime) -> None:
    action_fail(action_id, error=error, at=at)


def _effect_reset_action(message: InboundMessage, *, action_id: Any) -> None:
    action_reset(action_id)


def _effect_thread_draft_status(message: InboundMessage, *, status: str) -> None:
    if not message.thread_id:
        return
    if sql.enabled():
        sql.execute(lifecycle_sql.thread_draft_status_sql(), [status, sql.uuid_text(message.thread_id)])
        return
    ConversationThread.objects.filter(pk=message.thread_id).update(latest_draft_status=status)


def next_utc_midnight(at: dt.datetime) -> dt.datetime:
    day = at.astimezone(dt.UTC).date() + dt.timedelta(days=1)
    return dt.datetime(day.year, day.month, day.day, tzinfo=dt.UTC)


def daily_limit_reached(config: AgentConfig, now: dt.datetime) -> bool:
    """AGT-21: reached only while `now <= reset_at` and `count >= max`."""
    reset_at = config.daily_auto_reply_reset_at
    return (
        reset_at is not None
        and now <= reset_at
        and config.daily_auto_reply_count >= config.max_daily_auto_replies
    )


def _effect_increment_auto_reply(message: InboundMessage, *, at: dt.datetime) -> None:
    """AGT-21 under the config row's lock (the route step holds it already while it checks the limit)."""
    config = AgentConfig.objects.select_for_update().filter(organization_id=message.organization_id).first()
    if config is None:
        return
    if config.daily_auto_reply_reset_at is None or at > config.daily_auto_reply_reset_at:
        config.daily_auto_reply_count = 1
        config.daily_auto_reply_reset_at = next_utc_midnight(at)
    else:
        config.daily_auto_reply_count += 1
    config.save(update_fields=["daily_auto_reply_count", "daily_auto_reply_reset_at"])


# --- companion fields written in state (AGT-16, AGT-19, AGT-20: no status change) -------------------------

_IN_STATE_FIELDS = frozenset(
    {
        "context_tier",
        "context_coverage",
        "grounding_sources",
        "draft_response",
        "draft_subject",
        "draft_options",
        "draft_quality",
        "confidence_score",
        "agent_decision",
        "draft_revisions",
        "is_draft_edited",
        "draft_saved_at",
        "agent_note",
    }
)


def message_record(message_id: Any, *, expect_status: str | None = None, **fields: Any) -> bool:
    """Write companion fields without a status change (optionally only while the message is in `expect_status`)."""
    unknown = set(fields) - _IN_STATE_FIELDS
    if unknown:
        raise ValueError(f"not an in-state field: {sorted(unknown)}")
    if sql.enabled() and expect_status is not None and fields:
        # the walker's path (context and draft, once per message each): the UPDATE written out and prepared
        names = tuple(fields)
        values = [sql.db_value(InboundMessage, name, fields[name]) for name in names]
        params = [*values, timezone.now(), sql.uuid_text(message_id), expect_status]
        return bool(sql.execute(sql.message_record_sql(names), params))
    qs = InboundMessage.objects.filter(pk=message_id)
    if expect_status is not None:
        qs = qs.filter(processing_status=expect_status)
    return bool(qs.update(**fields, updated_at=timezone.now()))
