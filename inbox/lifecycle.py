"""The only writer of `InboundMessage.processing_status` and `AgentAction.status` (AGT-04 … AGT-09).

- `message_transition(message_id=…, to=…, input=…)`: `InboxLifecycle` on the kernel's runner (D-04) with the pure
  reducer `message_reduce`; it also writes the companion fields patched with the status (AGT-07), the running
  step's action completion/failure and the thread's `latest_draft_status` (AGT-08 effects).
- Agent actions (AGT-09): `action_prepare` (a pending row, reusing a reset one of the same kind), the
  compare-and-set claim `action_claim`, `action_complete`, `action_fail` (retry count +1, `abandoned` at 3),
  `action_reset`.
"""

from __future__ import annotations

import datetime as dt
import functools
from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.db import connection, transaction
from django.db.models import Case, F, Q, When
from django.utils import timezone

from inbox import rows
from inbox.models import (
    TERMINAL,
    ActionStatus,
    AgentAction,
    AgentConfig,
    ConversationThread,
    DraftStatus,
    InboundMessage,
    ProcessingStatus,
)
from inbox.queues import inbox_queue
from owlat.lifecycle import Audit, Call, Decision, Enqueue, Lifecycle, Outcome, legal_edges

P = ProcessingStatus
MAX_RETRY_ATTEMPTS = 3
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

    if to == P.CLASSIFYING:
        patch["security_flags"] = input.get("security_flags")
        patch["context_tier"] = input.get("context_tier")
    elif to == P.QUARANTINED:
        patch["security_flags"] = input.get("security_flags")
    elif to == P.DRAFTING:
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
    elif to == P.AWAITING_CLARIFICATION:
        patch["classification"] = input.get("classification")
        patch["confidence_score"] = (input.get("classification") or {}).get("confidence")
        patch["draft_options"] = {"questions": input.get("questions") or [], "askedAt": at.isoformat()}
    elif to == P.DRAFT_READY:
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
    elif to == P.ARCHIVED:
        if "security_flags" in input:
            patch["security_flags"] = input["security_flags"]
        patch["archive_reason"] = input.get("reason")
    elif to == P.FAILED:
        patch["error_message"] = input.get("error_message") or "Pipeline error"
    elif to == P.RECEIVED:
        patch["error_message"] = None
        if input.get("source") == "release_quarantine":
            patch["security_flags"] = None
            patch["released_content_hash"] = input.get("content_hash")
            patch["is_auto_send_blocked"] = True  # AGT-14: a released message is never auto-sent
        effects.append(Enqueue(START_TASK, (message_id,), queue=inbox_queue()))
        if input.get("reset_action_id"):
            effects.append(Call("reset_action", {"action_id": input["reset_action_id"]}))
    elif to == P.APPROVED:
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

    if "agent_decision" in input:
        patch["agent_decision"] = input["agent_decision"]
    if input.get("action_id") and to != P.FAILED:
        effects.append(
            Call(
                "complete_action",
                {
                    "action_id": input["action_id"],
                    "output": input.get("output"),
                    "duration_ms": input.get("duration_ms"),
                    "model_used": input.get("model_used"),
                    "token_usage": input.get("token_usage"),
                    "at": at,
                },
            )
        )
    if to == P.FAILED and input.get("failing_action_id"):
        effects.append(
            Call(
                "fail_action",
                {"action_id": input["failing_action_id"], "error": patch["error_message"], "at": at},
            )
        )
    if to in _THREAD_DRAFT_STATUS:
        effects.append(Call("thread_draft_status", {"status": str(_THREAD_DRAFT_STATUS[to])}))
    if input.get("audit"):
        details = {"previousStatus": frm, "newStatus": to, **(input.get("audit_details") or {})}
        effects.append(Audit(input["audit"], details))
    return Decision.accept(patch, effects=effects)


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
    if rows.enabled():
        sql = f"UPDATE {rows.table(ConversationThread)} SET latest_draft_status = %s WHERE id = %s::uuid"
        rows.execute(sql, [status, rows.uuid_text(message.thread_id)])
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


# --- agent actions (AGT-09) ---------------------------------------------------------------------------------


def action_prepare(
    *, message: InboundMessage, kind: str, input: dict[str, Any] | None = None, reuse: bool = True
) -> AgentAction:
    """The pending row for the next run of `kind`: a reset (`pending`) row of that kind is reused, retry count
    kept, so the three-attempt limit holds across cron retries; else a new row. `reuse=False`: the caller (the
    walker, holding the message row's lock) knows the message has no pending row, so the look-up is skipped —
    a reset row only appears through `action_reset` on a transition of that locked message."""

    def create() -> AgentAction:
        fields = {
            "organization_id": message.organization_id,
            "inbound_message_id": message.pk,
            "action_type": kind,
            "input": input,
            "scheduled_at": timezone.now(),
        }
        if not rows.enabled():
            return AgentAction.objects.create(**fields)
        # the walker's path, once per step: the INSERT written out and prepared (inbox.rows); the row as
        # `create` leaves it (the model's defaults, `created_at` the time of the insert)
        action = AgentAction(**fields)
        action.created_at = timezone.now()
        rows.execute(_insert_action_sql(), [_insert_value(action, f) for f in _INSERT_FIELDS])
        action._state.adding = False
        action._state.db = connection.alias
        return action

    if not reuse:
        return create()
    with transaction.atomic(savepoint=False):
        row = (
            AgentAction.objects.select_for_update()
            .filter(inbound_message_id=message.pk, action_type=kind, status=ActionStatus.PENDING)
            .order_by("-created_at")
            .first()
        )
        if row is not None:
            now = timezone.now()
            AgentAction.objects.filter(pk=row.pk).update(input=input, error_message=None, scheduled_at=now)
            row.input, row.scheduled_at = input, now
            return row
        return create()


def action_claim(action_id: Any, *, at: dt.datetime | None = None) -> bool:
    """Compare-and-set `pending → running`. A `running` row whose worker died (or was killed at the task
    timeout) past the lease is reclaimed, and that counts as an attempt (`retry_count` + 1); a row whose
    attempts that would use up is not claimed: `action_lease_exhausted` says so and the walker fails it."""
    at = at or timezone.now()
    stale = at - dt.timedelta(seconds=settings.INBOX_STEP_LEASE_SECONDS)
    if rows.enabled():
        params = [
            ActionStatus.RUNNING,
            at,
            ActionStatus.RUNNING,
            rows.uuid_text(action_id),
            ActionStatus.PENDING,
        ]
        return bool(
            rows.execute(_claim_sql(), [*params, ActionStatus.RUNNING, stale, MAX_RETRY_ATTEMPTS - 1])
        )
    won = (
        AgentAction.objects.filter(pk=action_id)
        .filter(
            Q(status=ActionStatus.PENDING)
            | Q(status=ActionStatus.RUNNING, started_at__lt=stale, retry_count__lt=MAX_RETRY_ATTEMPTS - 1)
        )
        .update(
            status=ActionStatus.RUNNING,
            started_at=at,
            completed_at=None,
            retry_count=Case(
                When(status=ActionStatus.RUNNING, then=F("retry_count") + 1),
                default=F("retry_count"),
                output_field=AgentAction._meta.get_field("retry_count"),
            ),
        )
    )
    return bool(won)


def action_lease_exhausted(action_id: Any, *, at: dt.datetime | None = None) -> bool:
    """True for a `running` row past its lease whose reclaim would use up its attempts."""
    at = at or timezone.now()
    stale = at - dt.timedelta(seconds=settings.INBOX_STEP_LEASE_SECONDS)
    return AgentAction.objects.filter(
        pk=action_id,
        status=ActionStatus.RUNNING,
        started_at__lt=stale,
        retry_count__gte=MAX_RETRY_ATTEMPTS - 1,
    ).exists()


def action_complete(
    action_id: Any,
    *,
    output: Any = None,
    duration_ms: int | None = None,
    model_used: str | None = None,
    token_usage: dict | None = None,
    at: dt.datetime | None = None,
) -> bool:
    at = at or timezone.now()
    patch = {
        "output": output,
        "completed_at": at,
        "duration_ms": duration_ms,
        "model_used": model_used,
        "token_usage": token_usage,
        "error_message": None,
    }
    if duration_ms is not None:
        # the walker's path: one compare-and-set `running → completed` (a finished row is never completed twice)
        if rows.enabled():
            values = [_action_value(name, patch[name]) for name in _COMPLETE_FIELDS]
            params = [ActionStatus.COMPLETED, *values, rows.uuid_text(action_id), ActionStatus.RUNNING]
            return bool(rows.execute(_complete_sql(), params))
        return bool(
            AgentAction.objects.filter(pk=action_id, status=ActionStatus.RUNNING).update(
                status=ActionStatus.COMPLETED, **patch
            )
        )
    with transaction.atomic(savepoint=False):
        row = AgentAction.objects.select_for_update().filter(pk=action_id).first()
        if row is None or row.status != ActionStatus.RUNNING:
            return False
        if row.started_at:
            patch["duration_ms"] = max(0, int((at - row.started_at).total_seconds() * 1000))
        row.complete(patch)
        row.save(update_fields=["status", *patch])
    return True


# --- the walker's action statements written out (inbox.rows: prepared on PostgreSQL) -----------------------

_INSERT_FIELDS = tuple(f.attname for f in AgentAction._meta.concrete_fields)
_COMPLETE_FIELDS = ("output", "completed_at", "duration_ms", "model_used", "token_usage", "error_message")


def _action_value(attname: str, value: Any) -> Any:
    return rows.db_value(AgentAction, attname, value)


def _insert_value(action: AgentAction, attname: str) -> Any:
    return _action_value(attname, getattr(action, attname))


def _action_fields() -> dict[str, Any]:
    return rows.fields_by_attname(AgentAction)


def _cast(attname: str) -> str:
    return rows.cast(AgentAction, attname)


@functools.cache
def _insert_action_sql() -> str:
    qn = connection.ops.quote_name
    columns = ", ".join(qn(_action_fields()[a].column) for a in _INSERT_FIELDS)
    values = ", ".join(_cast(a) for a in _INSERT_FIELDS)
    return f"INSERT INTO {rows.table(AgentAction)} ({columns}) VALUES ({values})"


@functools.cache
def _claim_sql() -> str:
    return (
        f"UPDATE {rows.table(AgentAction)} SET status = %s, started_at = %s, completed_at = NULL, "
        "retry_count = retry_count + CASE WHEN status = %s THEN 1 ELSE 0 END "
        "WHERE id = %s::uuid AND (status = %s OR (status = %s AND started_at < %s AND retry_count < %s))"
    )


@functools.cache
def _complete_sql() -> str:
    qn = connection.ops.quote_name
    sets = ", ".join(f"{qn(_action_fields()[a].column)} = {_cast(a)}" for a in _COMPLETE_FIELDS)
    return f"UPDATE {rows.table(AgentAction)} SET status = %s, {sets} WHERE id = %s::uuid AND status = %s"


def action_fail(action_id: Any, *, error: str, at: dt.datetime | None = None) -> str | None:
    """Retry count +1; `abandoned` when it reaches MAX_RETRY_ATTEMPTS, else `failed`. Returns the new status."""
    at = at or timezone.now()
    with transaction.atomic(savepoint=False):
        row = AgentAction.objects.select_for_update().filter(pk=action_id).first()
        if row is None or row.status not in (ActionStatus.PENDING, ActionStatus.RUNNING):
            return None
        count = row.retry_count + 1
        patch: dict[str, Any] = {"retry_count": count, "error_message": error, "completed_at": at}
        if row.started_at:
            patch["duration_ms"] = max(0, int((at - row.started_at).total_seconds() * 1000))
        if count >= MAX_RETRY_ATTEMPTS:
            row.abandon(patch)
        else:
            row.fail(patch)
        row.save(update_fields=["status", *patch])
        return row.status


def action_reset(action_id: Any) -> bool:
    """`failed|abandoned → pending`, retry count kept (AGT-24, AGT-25 retry)."""
    with transaction.atomic(savepoint=False):
        row = AgentAction.objects.select_for_update().filter(pk=action_id).first()
        if row is None or row.status not in (ActionStatus.FAILED, ActionStatus.ABANDONED):
            return False
        row.reset({"completed_at": None, "scheduled_at": None})
        row.save(update_fields=["status", "completed_at", "scheduled_at"])
    return True


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
    if rows.enabled() and expect_status is not None and fields:
        # the walker's path (context and draft, once per message each): the UPDATE written out and prepared
        names = tuple(fields)
        values = [rows.db_value(InboundMessage, name, fields[name]) for name in names]
        params = [*values, timezone.now(), rows.uuid_text(message_id), expect_status]
        return bool(rows.execute(_record_sql(names), params))
    qs = InboundMessage.objects.filter(pk=message_id)
    if expect_status is not None:
        qs = qs.filter(processing_status=expect_status)
    return bool(qs.update(**fields, updated_at=timezone.now()))


@functools.lru_cache(maxsize=32)
def _record_sql(names: tuple[str, ...]) -> str:
    qn = connection.ops.quote_name
    by_name = rows.fields_by_attname(InboundMessage)
    sets = ", ".join(f"{qn(by_name[n].column)} = {rows.cast(InboundMessage, n)}" for n in names)
    return (
        f"UPDATE {rows.table(InboundMessage)} SET {sets}, {qn('updated_at')} = %s "
        f"WHERE id = %s::uuid AND {qn('processing_status')} = %s"
    )
