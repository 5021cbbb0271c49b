"""The only writer of `AgentAction.status` (AGT-09): `action_prepare` (a pending row, reusing a reset one of the
same kind), the compare-and-set claim `action_claim`, `action_complete`, `action_fail` (retry count +1,
`abandoned` at 3), `action_reset`."""

from __future__ import annotations

import datetime as dt
from typing import Any

from django.conf import settings
from django.db import connection, transaction
from django.db.models import Case, F, Q, When
from django.utils import timezone

from inbox import sql
from inbox.lifecycle import sql as lifecycle_sql
from inbox.models import ActionStatus, AgentAction, InboundMessage

MAX_RETRY_ATTEMPTS = 3


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
        if not sql.enabled():
            return AgentAction.objects.create(**fields)
        # the walker's path, once per step: the INSERT written out and prepared (inbox.sql); the row as
        # `create` leaves it (the model's defaults, `created_at` the time of the insert)
        action = AgentAction(**fields)
        action.created_at = timezone.now()
        values = [sql.db_value(AgentAction, f, getattr(action, f)) for f in sql.ACTION_INSERT_FIELDS]
        sql.execute(sql.action_insert_sql(), values)
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
    if sql.enabled():
        params = [
            ActionStatus.RUNNING,
            at,
            ActionStatus.RUNNING,
            sql.uuid_text(action_id),
            ActionStatus.PENDING,
        ]
        return bool(
            sql.execute(
                lifecycle_sql.action_claim_sql(),
                [*params, ActionStatus.RUNNING, stale, MAX_RETRY_ATTEMPTS - 1],
            )
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
        if sql.enabled():
            values = [
                sql.db_value(AgentAction, name, patch[name]) for name in lifecycle_sql.ACTION_COMPLETE_FIELDS
            ]
            params = [ActionStatus.COMPLETED, *values, sql.uuid_text(action_id), ActionStatus.RUNNING]
            return bool(sql.execute(lifecycle_sql.action_complete_sql(), params))
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
