"""Retrying inbox work, the one service behind every retry: the 5-minute cron (AGT-24 "retry failed agent
actions"), the operator's Retry button and bulk retry in the admin, "Process N waiting messages", and
`manage.py reprocess_message`.

`message_restart` picks what a message needs: a `failed` one is retried (its latest failed or abandoned action
reset, so the walker resumes at the step that failed and the security scan's verdict is kept); a `received` one
that never started (the agent was off, the start task lost) is started; a stuck one (a step status with no
progress for `STUCK_AFTER`) has its lost step enqueued again, which the step claim makes safe. Every refusal
says what to do."""

from __future__ import annotations

import datetime as dt
from collections import Counter
from typing import Any

from django.db import transaction
from django.db.models import Q, QuerySet
from django.utils import timezone

from inbox.lifecycle import MAX_RETRY_ATTEMPTS, message_transition
from inbox.models import ActionStatus, AgentAction, InboundMessage
from inbox.models import ProcessingStatus as P
from owlat.lifecycle import Outcome

BATCH = 20
#: a message in a step's status without progress for this long is stuck (the step lease is 5 minutes)
STUCK_AFTER = dt.timedelta(minutes=15)
IN_PROGRESS = (P.SECURITY_CHECK, P.CLASSIFYING, P.DRAFTING)
#: at most this many messages per bulk retry (the confirmation page says so)
BULK_LIMIT = 500


def failed_actions_retry(*, batch: int = BATCH) -> int:
    """Up to `batch` failed actions below the attempt cap whose message is `failed`: lifecycle → `received`
    (source `cron_retry`, the action reset to pending), which restarts the walker. Returns how many."""
    rows = list(
        AgentAction.objects.filter(
            status=ActionStatus.FAILED,
            retry_count__lt=MAX_RETRY_ATTEMPTS,
            inbound_message__processing_status=P.FAILED,
        )
        .order_by("completed_at")
        .values_list("pk", "inbound_message_id")[:batch]
    )
    done = 0
    seen = set()
    for action_id, message_id in rows:
        if message_id in seen:
            continue
        seen.add(message_id)
        outcome = message_transition(
            message_id=message_id,
            to=P.RECEIVED,
            actor="system:cron_retry",
            input={"source": "cron_retry", "reset_action_id": str(action_id)},
        )
        done += int(outcome.ok)
    return done


# --- what needs an operator ------------------------------------------------------------------------------


def _scoped(qs: QuerySet, organization_id: Any) -> QuerySet:
    return qs if organization_id is None else qs.filter(organization_id=organization_id)


def stuck_q(now: dt.datetime | None = None) -> Q:
    """In a step's status, or `received` with its pipeline on, without progress for `STUCK_AFTER`."""
    before = (now or timezone.now()) - STUCK_AFTER
    return Q(processing_status__in=IN_PROGRESS, updated_at__lt=before) | Q(
        processing_status=P.RECEIVED, updated_at__lt=before, actions__isnull=False
    )


def abandoned_q() -> Q:
    """`failed` with an action that used up its attempts: the cron no longer retries it."""
    return Q(processing_status=P.FAILED, actions__status=ActionStatus.ABANDONED)


def needs_retry(organization_id: Any, *, now: dt.datetime | None = None) -> QuerySet:
    """Failed, abandoned and stuck messages (newest first), the organization's or every one's (None)."""
    qs = InboundMessage.objects.filter(Q(processing_status=P.FAILED) | stuck_q(now)).distinct()
    return _scoped(qs, organization_id).order_by("-received_at")


def kind_of(message: InboundMessage, *, now: dt.datetime | None = None) -> str:
    """`abandoned`, `failed` or `stuck`: how the dashboard and the confirmation page describe the message."""
    if message.processing_status == P.FAILED:
        abandoned = AgentAction.objects.filter(
            inbound_message_id=message.pk, status=ActionStatus.ABANDONED
        ).exists()
        return "abandoned" if abandoned else "failed"
    return "stuck"


def waiting(organization_id: Any) -> QuerySet:
    """`received` messages that never started (no step row): stored while the agent was off."""
    qs = InboundMessage.objects.filter(processing_status=P.RECEIVED, actions__isnull=True)
    return _scoped(qs, organization_id).order_by("received_at")


def pipeline_off_reason(organization_id: Any) -> str | None:
    """Why new mail stays `received` for the organization, with what to do; None when its pipeline runs."""
    from inbox.llm import llm_configured
    from inbox.receive import pipeline_enabled
    from owlat.flags import resolve_flags
    from owlat.models import OrganizationSettings

    stored = (
        OrganizationSettings.objects.filter(organization_id=organization_id)
        .values_list("feature_flags", flat=True)
        .first()
    ) or {}
    if pipeline_enabled(organization_id, stored):
        return None
    effective = resolve_flags(stored, organization_id)
    if not effective["inbox"]:
        what = "the inbox feature is off"
    elif not stored.get("ai.agent", True):
        what = "the AI agent feature is off"
    elif llm_configured(organization_id) and not effective["ai"]:
        what = "the AI feature is off"
    else:
        what = "the agent is off"
    return (
        f"The agent does not process new mail because {what}: messages are stored and stay “received”. "
        "Turn it on in Organization settings (its feature switches), then process the waiting messages from the "
        "inbox’s message list."
    )


# --- retrying ----------------------------------------------------------------------------------------------


def _lost_step_enqueue(m: InboundMessage) -> Outcome:
    from inbox.queues import inbox_queue
    from inbox.walker import STEP_TASK
    from owlat.jobs import enqueue

    action = (
        AgentAction.objects.filter(
            inbound_message_id=m.pk, status__in=(ActionStatus.PENDING, ActionStatus.RUNNING)
        )
        .order_by("-created_at")
        .first()
    )
    if action is None:
        return Outcome(
            ok=False,
            reason="no_step",
            message="No step of this message is waiting to run: archive it, or wait for the next sweep.",
            from_state=m.processing_status,
            object_id=m.pk,
        )
    with transaction.atomic():
        enqueue(STEP_TASK, str(m.pk), str(action.pk), queue=inbox_queue())
        # progress: not listed as stuck again before another `STUCK_AFTER` (no status changes here)
        InboundMessage.objects.filter(pk=m.pk).update(updated_at=timezone.now())
    return Outcome(ok=True, reason="resumed", from_state=m.processing_status, to_state=m.processing_status)


def message_restart(*, message_id: Any, organization_id: Any, actor: str) -> Outcome:
    """Run the pipeline again for one message (see the module docstring). `organization_id` None: any
    organization's (the management command)."""
    from inbox import review
    from inbox.queues import inbox_queue
    from inbox.receive import START_TASK
    from owlat.jobs import enqueue

    m = _scoped(InboundMessage.objects.all(), organization_id).filter(pk=message_id).first()
    if m is None:
        return Outcome(ok=False, reason="message_not_found", message="Message not found")
    if m.processing_status == P.FAILED:
        return review.message_retry(message_id=m.pk, organization_id=m.organization_id, actor=actor)
    if m.processing_status == P.RECEIVED:
        reason = pipeline_off_reason(m.organization_id)
        if reason is not None:
            return Outcome(ok=False, reason="pipeline_off", message=reason, from_state=m.processing_status)
        with transaction.atomic():
            enqueue(START_TASK, str(m.pk), queue=inbox_queue())
        return Outcome(ok=True, reason="started", from_state=P.RECEIVED, to_state=P.RECEIVED)
    if m.processing_status in IN_PROGRESS:
        return _lost_step_enqueue(m)
    return Outcome(
        ok=False,
        reason="not_retryable",
        message=f"The message is {m.get_processing_status_display().lower()}: only failed, stuck or waiting "
        "messages can be retried.",
        from_state=m.processing_status,
    )


def messages_restart(*, message_ids: list[Any], organization_id: Any, actor: str) -> Counter[str]:
    """Bulk `message_restart`, at most `BULK_LIMIT`; counts by outcome: `retried`, `started`, `resumed`,
    `refused`."""
    counts: Counter[str] = Counter()
    for pk in list(message_ids)[:BULK_LIMIT]:
        outcome = message_restart(message_id=pk, organization_id=organization_id, actor=actor)
        counts[(outcome.reason or "retried") if outcome.ok else "refused"] += 1
    return counts


def kinds_count(messages: list[InboundMessage], *, now: dt.datetime | None = None) -> Counter[str]:
    """How many of `messages` are `failed`, `abandoned`, `stuck`, `waiting` or `not retryable` (the bulk
    confirmation page's figures), in two queries."""
    ids = [m.pk for m in messages]
    abandoned = set(
        AgentAction.objects.filter(inbound_message_id__in=ids, status=ActionStatus.ABANDONED).values_list(
            "inbound_message_id", flat=True
        )
    )
    started = set(
        AgentAction.objects.filter(inbound_message_id__in=ids).values_list("inbound_message_id", flat=True)
    )
    before = (now or timezone.now()) - STUCK_AFTER
    counts: Counter[str] = Counter()
    for m in messages:
        if m.processing_status == P.FAILED:
            counts["abandoned" if m.pk in abandoned else "failed"] += 1
        elif m.processing_status == P.RECEIVED and m.pk not in started:
            counts["waiting"] += 1
        elif m.processing_status in (*IN_PROGRESS, P.RECEIVED) and m.updated_at < before:
            counts["stuck"] += 1
        else:
            counts["not retryable"] += 1
    return counts
