"""The step walker (AGT-10 … AGT-12): exactly one step per task execution, persisted between steps.

Each step has its agent-action row prepared (`pending`) in the transaction that schedules it; the task claims
it with a compare-and-set, so a duplicated task is a no-op and a finished step is never redone. A worker that
dies mid-step leaves the row `running`; after the lease (`INBOX_STEP_LEASE_SECONDS`) the task's redelivery or
the 5-minute sweep claims it again.
"""

from __future__ import annotations

import datetime as dt
import functools
import logging
import time
from typing import Any

from django.db import connection, transaction
from django.db.models import Exists, OuterRef
from django.utils import timezone

from inbox import sql
from inbox.breakers import llm_failure_record
from inbox.lifecycle import (
    action_claim,
    action_complete,
    action_fail,
    action_lease_exhausted,
    action_prepare,
    message_record,
    message_transition,
    message_transition_locked,
)
from inbox.llm import LlmError
from inbox.models import ActionStatus, AgentAction, AgentConfig, InboundMessage, StepKind
from inbox.models import ProcessingStatus as P
from inbox.queues import inbox_queue
from inbox.steps import Route, StepContext, step_module
from owlat.jobs import enqueue
from owlat.models import Contact, OrganizationSettings

logger = logging.getLogger(__name__)
STEP_TASK = "inbox.tasks.step_run_task"
_FINISHED = (ActionStatus.COMPLETED, ActionStatus.FAILED, ActionStatus.ABANDONED, ActionStatus.SKIPPED)


def schedule_step(
    message: InboundMessage, kind: str, input: dict[str, Any] | None = None, *, reuse: bool = True
) -> AgentAction:
    """Inside the caller's transaction: the pending action row and its task. `reuse=False` when the caller
    knows the message has no other pending row (so no reset row to reuse, and no look-up for one)."""
    action = action_prepare(message=message, kind=kind, input=input or {}, reuse=reuse)
    enqueue(STEP_TASK, str(message.pk), str(action.pk), queue=inbox_queue())
    return action


def message_start(message_id: Any, *, now: dt.datetime | None = None) -> str:
    """AGT-10 `start`: `received → security_check` and the security scan's pending action, committed together;
    then the scan runs in this same task execution — the start hop is no step of its own, so running the first
    step here keeps "one step per task execution, persisted between steps" and saves a queue hop per message.

    A redelivered start task (its worker died after the commit) finds the message in `security_check` with the
    scan still pending, or running past the lease, and runs it — the claim's compare-and-set makes that safe;
    the 5-minute sweep (`stale_steps_resume`) covers the rest. The message row locked here (with its contact,
    the agent configuration and the stored flags, one statement) is the one the scan runs on: no second read."""
    now = now or timezone.now()
    with transaction.atomic():
        message, config, flags = _start_load(message_id)
        if message is None:
            return "message not found"
        outcome = message_transition_locked(message, P.SECURITY_CHECK, at=now)
        resumed = _resume_at_failed_step(message, now) if outcome.ok and message.pending_actions else None
        if resumed is not None:
            action = resumed
        elif outcome.ok:
            action = action_prepare(
                message=message, kind=StepKind.SECURITY_SCAN, input={}, reuse=message.pending_actions
            )
        else:
            action = (
                _pending_of(message.pk)
                .filter(
                    action_type=StepKind.SECURITY_SCAN,
                    status__in=(ActionStatus.PENDING, ActionStatus.RUNNING),
                )
                .order_by("-created_at")
                .first()
                if message.processing_status == P.SECURITY_CHECK
                else None
            )
            if action is None:
                return f"not started: {outcome.reason}"
        # other pending rows of the message besides the scan's (a reset row a later step may reuse)
        others = message.pending_actions and _pending_of(message.pk).exclude(pk=action.pk).exists()
    action.inbound_message = message
    # its own clock: claimed after the start committed
    summary = _run(action, config=config, others_pending=others, stored_flags=flags)
    return f"{'resumed' if resumed is not None else 'started'}; {action.action_type} {action.pk}: {summary}"


def _resume_at_failed_step(message: InboundMessage, now: dt.datetime) -> AgentAction | None:
    """A retried message (ADR-008: no partial retry wastes model calls) resumes at the step that failed: when
    its reset row is a later step than the scan and the scan's verdict is kept (`security_flags`), the message
    moves on from `security_check` to that step's status with the fields earlier steps stored (verdict, context
    tier, classification) and the reset row runs next, its input (briefing, classification) as first given.
    None: start at the scan (no such row, or nothing kept to resume from)."""
    reset = (
        _pending_of(message.pk)
        .exclude(action_type=StepKind.SECURITY_SCAN)
        .filter(retry_count__gt=0)
        .order_by("-created_at")
        .first()
    )
    if reset is None or message.security_flags is None:
        return None
    target = step_module(reset.action_type).RUNS_IN
    if target == P.DRAFTING and not message.classification:
        return None
    kept = {"security_flags": message.security_flags, "context_tier": message.context_tier, "resumed": True}
    if not message_transition_locked(message, P.CLASSIFYING, at=now, input=kept).ok:
        return None
    if target == P.DRAFTING:
        moved = message_transition_locked(
            message, P.DRAFTING, at=now, input={"classification": message.classification, "resumed": True}
        )
        if not moved.ok:
            return None
    return reset


def _pending_of(message_id: Any) -> Any:
    return AgentAction.objects.filter(inbound_message_id=message_id, status=ActionStatus.PENDING)


def step_run(message_id: Any, action_id: Any, *, now: dt.datetime | None = None) -> str:
    """AGT-10 `run_step` for the prepared action `action_id`."""
    loaded = _step_load(message_id, action_id)
    if loaded is None:
        return "action not found"
    action, config, others_pending = loaded
    return _run(action, config=config, others_pending=others_pending, now=now)


def _start_load(message_id: Any) -> tuple[InboundMessage | None, AgentConfig | None, dict[str, Any] | None]:
    """Inside the start's transaction, one statement: the message row locked, with its contact, the
    organization's agent configuration (None: no row yet), its stored flags and whether the message has a
    pending action (`pending_actions`)."""
    if sql.enabled():
        try:
            pk = sql.uuid_text(message_id)
        except ValueError:
            pk = None
        if pk is not None:
            row = sql.fetchone(sql.walker_start_sql(), [ActionStatus.PENDING, pk])
            if row is None:
                return None, None, None
            message, config, flags = _built(row, with_flags=True)
            message.pending_actions = row[-1]
            return message, config, flags
    message = (
        InboundMessage.objects.select_related(
            "contact", "organization__agent_config", "organization__settings"
        )
        .select_for_update(of=("self",))
        .annotate(pending_actions=Exists(_pending_of(OuterRef("pk"))))
        .filter(pk=message_id)
        .first()
    )
    if message is None:
        return None, None, None
    from inbox.steps.scan import _loaded_flags

    try:
        config = message.organization.agent_config
    except AgentConfig.DoesNotExist:
        config = None
    return message, config, _loaded_flags(message)


def _step_load(message_id: Any, action_id: Any) -> tuple[AgentAction, AgentConfig | None, bool] | None:
    """One statement: the action, its message (with contact), the organization's agent configuration (None: no
    row yet), and whether the message has another pending action (a reset row the next step must reuse,
    AGT-24)."""
    if sql.enabled():
        try:
            ids = [sql.uuid_text(action_id), sql.uuid_text(message_id)]
        except ValueError:
            ids = None
        if ids is not None:
            row = sql.fetchone(sql.walker_step_sql(), [ActionStatus.PENDING, *ids])
            if row is None:
                return None
            n = sql.width(AgentAction)
            action = sql.build(AgentAction, row[:n])
            message, config, _ = _built(row[n:])
            sql.cache_related(action, "inbound_message", message)
            return action, config, row[-1]
    action = (
        AgentAction.objects.select_related(
            "inbound_message__contact", "inbound_message__organization__agent_config"
        )
        .annotate(
            others_pending=Exists(_pending_of(OuterRef("inbound_message_id")).exclude(pk=OuterRef("pk")))
        )
        .filter(pk=action_id, inbound_message_id=message_id)
        .first()
    )
    if action is None:
        return None
    try:
        config = action.inbound_message.organization.agent_config
    except AgentConfig.DoesNotExist:
        config = None
    return action, config, action.others_pending


def _built(row: tuple, *, with_flags: bool = False) -> tuple[InboundMessage, AgentConfig | None, Any]:
    """The message with its contact cached, the agent configuration, and the stored flags ({} without a settings
    row) from `inbox.sql.message_columns`' part of `row` (the row's last column is the pending-action test)."""
    start = 0
    built = []
    for model in (InboundMessage, Contact, AgentConfig):
        end = start + sql.width(model)
        built.append(sql.build(model, row[start:end]))
        start = end
    message, contact, config = built
    sql.cache_related(message, "contact", contact)
    flags = None
    if with_flags:
        flags = {}
        if row[start] is not None:
            flags = _flags_field().from_db_value(row[start + 1], None, connection) or {}
    return message, config, flags


@functools.cache
def _flags_field() -> Any:
    return OrganizationSettings._meta.get_field("feature_flags")


def _config_locked(pk: Any) -> AgentConfig:
    """The agent configuration row locked and read anew (`select_for_update().get(pk=…)`)."""
    if sql.enabled():
        row = sql.fetchone(sql.config_lock_sql(), [pk])
        if row is None:
            raise AgentConfig.DoesNotExist("AgentConfig matching query does not exist.")
        return sql.build(AgentConfig, row)
    return AgentConfig.objects.select_for_update().get(pk=pk)


def _lock(message_id: Any) -> InboundMessage | None:
    """The message row locked (`select_for_update`), its fields read anew."""
    if sql.enabled():
        row = sql.fetchone(sql.message_lock_sql(), [sql.uuid_text(message_id)])
        return None if row is None else sql.build(InboundMessage, row)
    return InboundMessage.objects.select_for_update().filter(pk=message_id).first()


def _run(
    action: AgentAction,
    *,
    config: AgentConfig | None,
    others_pending: bool,
    now: dt.datetime | None = None,
    stored_flags: dict[str, Any] | None = None,
) -> str:
    """Claim `action` and run its step on the already loaded message and agent configuration (None: the
    organization has none yet); then route it in one transaction."""
    if action.status in _FINISHED:
        return f"action already {action.status}"
    module = step_module(action.action_type)
    message = action.inbound_message
    message_id = message.pk
    if message.processing_status != module.RUNS_IN:
        return f"message is {message.processing_status}, step runs in {module.RUNS_IN}"
    now = now or timezone.now()
    if not action_claim(action.pk, at=now):
        if action_lease_exhausted(action.pk, at=now):
            return _lease_exhausted(action)
        return "not claimed"
    if config is None:
        config, _ = AgentConfig.objects.get_or_create(organization_id=message.organization_id)
    ctx = StepContext(message=message, config=config, now=now, stored_flags=stored_flags)
    started = time.perf_counter()
    step_input = action.input or {}
    try:
        output = module.execute(ctx, step_input)
        with transaction.atomic():
            locked = _lock_for_route(message, module, ctx.record)
            if locked is None or locked.processing_status != module.RUNS_IN:
                action_fail(action.pk, error="message changed state during the step", at=timezone.now())
                return "message changed state during the step"
            ctx.message = locked
            for write in ctx.on_close:
                write()
            if action.action_type == StepKind.ROUTE:
                # AGT-21: the daily-limit check and the increment happen under the config row's lock
                ctx.config = _config_locked(config.pk)
            route = module.route(output, step_input, ctx)
            return _apply_route(locked, action, route, output, ctx, started, reuse=others_pending)
    except Exception as exc:
        logger.warning("inbox step %s of %s failed: %s", action.action_type, message_id, exc, exc_info=True)
        error = str(exc) or type(exc).__name__
        outcome = message_transition(
            message_id=message_id,
            to=P.FAILED,
            input={"error_message": error[:2000], "failing_action_id": str(action.pk)},
        )
        if not outcome.ok:
            action_fail(action.pk, error=error[:2000])
        if isinstance(exc, LlmError):
            llm_failure_record(message.organization_id)  # AGT-20 `llm_failure` breaker
        return f"failed: {error[:200]}"


def _lease_exhausted(action: AgentAction) -> str:
    """The step's worker ran out of its lease on every attempt (killed at the task timeout, or died): the
    message fails and the action is abandoned, so it shows under "Needs attention" instead of looping."""
    error = (
        f"the {action.action_type} step did not finish within its lease (INBOX_STEP_LEASE_SECONDS) on "
        "every attempt: check the model's response time, then retry the message"
    )
    outcome = message_transition(
        message_id=action.inbound_message_id,
        to=P.FAILED,
        input={"error_message": error, "failing_action_id": str(action.pk)},
    )
    if not outcome.ok:
        action_fail(action.pk, error=error)
    return f"abandoned: {error}"


def _lock_for_route(
    message: InboundMessage, module: Any, record: dict[str, Any] | None
) -> InboundMessage | None:
    """The message row locked for the step's routing. A step that always routes in state and records companion
    fields gets its lock from that conditional UPDATE (status checked in the same statement); the message it
    started with, patched with the fields, is then current for everything an in-state route reads."""
    if record and getattr(module, "ROUTES_IN_STATE", False):
        if not message_record(message.pk, expect_status=module.RUNS_IN, **record):
            return None
        for key, value in record.items():
            setattr(message, key, value)
        return message
    if record:
        message_record(message.pk, expect_status=module.RUNS_IN, **record)
    return _lock(message.pk)


def _bookkeeping(output: Any, ctx: StepContext, started: float) -> dict[str, Any]:
    duration_ms = int((time.perf_counter() - started) * 1000)
    out = dict(output) if isinstance(output, dict) else {"value": output}
    out["llmDurationMs"] = ctx.calls.duration_ms
    return {"output": out, "duration_ms": duration_ms, **ctx.calls.as_fields()}


def _apply_route(
    message: InboundMessage,
    action: AgentAction,
    route: Route,
    output: Any,
    ctx: StepContext,
    started: float,
    *,
    reuse: bool = True,
) -> str:
    """AGT-11, inside the step's transaction with the message row locked."""
    book = _bookkeeping(output, ctx, started)
    if route.form == "in_state":
        action_complete(action.pk, at=timezone.now(), **book)
        nxt = schedule_step(message, route.next_step, route.next_input, reuse=reuse)
        return f"{action.action_type} done; next {route.next_step} {nxt.pk}"
    if route.form == "done":
        action_complete(action.pk, at=timezone.now(), **book)
        return f"{action.action_type} done; stop"
    outcome = message_transition_locked(
        message,
        route.to,
        at=timezone.now(),
        input={**route.transition_input, "action_id": str(action.pk), **book},
    )
    if not outcome.ok:
        action_fail(action.pk, error=f"transition to {route.to} rejected: {outcome.reason}")
        return f"transition to {route.to} rejected: {outcome.reason}"
    if route.next_step:
        nxt = schedule_step(message, route.next_step, route.next_input, reuse=reuse)
        return f"{action.action_type} → {route.to}; next {route.next_step} {nxt.pk}"
    return f"{action.action_type} → {route.to}"


def stale_steps_resume(*, now: dt.datetime | None = None, batch: int = 100) -> int:
    """Re-enqueue steps whose task was lost: `pending` rows older than 5 minutes and `running` rows past the
    lease, while their message is still in the step's status. The claim makes a double dispatch harmless."""
    from django.conf import settings
    from django.db.models import Q

    now = now or timezone.now()
    lease = now - dt.timedelta(seconds=settings.INBOX_STEP_LEASE_SECONDS)
    lost = now - dt.timedelta(minutes=5)
    rows = (
        AgentAction.objects.filter(
            Q(status=ActionStatus.PENDING, scheduled_at__lt=lost)
            | Q(status=ActionStatus.RUNNING, started_at__lt=lease)
        )
        .select_related("inbound_message")
        .order_by("created_at")[:batch]
    )
    count = 0
    with transaction.atomic():
        for row in rows:
            if row.inbound_message.processing_status == step_module(row.action_type).RUNS_IN:
                enqueue(STEP_TASK, str(row.inbound_message_id), str(row.pk), queue=inbox_queue())
                count += 1
    return count
