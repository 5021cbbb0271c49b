"""The inbox lifecycles' raw SQL that writes a status: the step walker's hot statements written out (prepared on
PostgreSQL, see `inbox.sql`); each caller keeps the ORM statement it replaces for other databases, and
`inbox/tests/test_sql.py` runs both."""

from __future__ import annotations

import functools

from inbox import sql
from inbox.models import AgentAction, ConversationThread

#: the fields `action_complete` sets with the status
ACTION_COMPLETE_FIELDS = (
    "output",
    "completed_at",
    "duration_ms",
    "model_used",
    "token_usage",
    "error_message",
)


@functools.cache
def thread_draft_status_sql() -> str:
    """`ConversationThread.objects.filter(pk=…).update(latest_draft_status=…)`."""
    return f"UPDATE {sql.table(ConversationThread)} SET latest_draft_status = %s WHERE id = %s::uuid"


@functools.cache
def action_claim_sql() -> str:
    """`action_claim`'s compare-and-set `pending → running` (a stale `running` row is reclaimed, +1 attempt)."""
    return (
        f"UPDATE {sql.table(AgentAction)} SET status = %s, started_at = %s, completed_at = NULL, "
        "retry_count = retry_count + CASE WHEN status = %s THEN 1 ELSE 0 END "
        "WHERE id = %s::uuid AND (status = %s OR (status = %s AND started_at < %s AND retry_count < %s))"
    )


@functools.cache
def action_complete_sql() -> str:
    """`action_complete`'s compare-and-set `running → completed` with `ACTION_COMPLETE_FIELDS`."""
    sets = ", ".join(
        f"{sql.column(AgentAction, a)} = {sql.cast(AgentAction, a)}" for a in ACTION_COMPLETE_FIELDS
    )
    return f"UPDATE {sql.table(AgentAction)} SET status = %s, {sets} WHERE id = %s::uuid AND status = %s"
