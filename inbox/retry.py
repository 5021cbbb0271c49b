"""AGT-24: "retry failed agent actions" (every 5 minutes)."""

from __future__ import annotations

from inbox.lifecycle import MAX_RETRY_ATTEMPTS, message_transition
from inbox.models import ActionStatus, AgentAction
from inbox.models import ProcessingStatus as P

BATCH = 20


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
