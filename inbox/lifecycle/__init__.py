"""The inbox's lifecycles: `messages` writes `InboundMessage.processing_status` (and the thread's draft status),
`actions` writes `AgentAction.status`. Both are reached through the names below."""

from inbox.lifecycle.actions import (
    MAX_RETRY_ATTEMPTS,
    action_claim,
    action_complete,
    action_fail,
    action_lease_exhausted,
    action_prepare,
    action_reset,
)
from inbox.lifecycle.messages import (
    LEGAL_EDGES,
    clamp_undo_delay_ms,
    daily_limit_reached,
    message_record,
    message_reduce,
    message_transition,
    message_transition_locked,
)

__all__ = [
    "LEGAL_EDGES",
    "MAX_RETRY_ATTEMPTS",
    "action_claim",
    "action_complete",
    "action_fail",
    "action_lease_exhausted",
    "action_prepare",
    "action_reset",
    "clamp_undo_delay_ms",
    "daily_limit_reached",
    "message_record",
    "message_reduce",
    "message_transition",
    "message_transition_locked",
]
