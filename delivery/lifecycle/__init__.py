"""The send lifecycle (DLV-05 … DLV-12): the single writer of `status` and its companion fields on both send
tables, keyed by `SendRef(kind, id)`.

Built on the shared runner (`owlat.lifecycle`, D-04) with `self_loop="reducer"` (repeat opens and clicks are
`recorded`, other repeats `duplicate`) and no audit rows (the timestamps are the history). The reducer is pure:
it returns the patch, the effects and how the input applied. Effects run in the same transaction:
campaign counters (DLV-10), contact activities (DLV-11, DOM-11), soft-bounce counting and suppression (DLV-12),
customer webhooks (DOM-18), completion handlers (DLV-18) and complaint handlers (registry, style.md Layering).
`test` sends run the lifecycle but emit no effects.

This package also holds the D-07 claim and hand-off compare-and-sets: they are the only other writes of the
claim fields and they never touch `status`.

Modules: `refs` (SendRef, constants, handler registries), `reducer` (pure), `effects` (effect handlers, per row
and in bulk), `transitions` (the lifecycles, `send_transition`, `send_transition_many`), `claims` (D-07). Import
the public names from `delivery.lifecycle`.
"""

from delivery.lifecycle.claims import (
    ClaimKeeper,
    cancel_campaign_queued,
    claim_orphans,
    claim_queued,
    claim_sends,
    claim_sends_topped_up,
    lease_orphans,
    mark_handed_off,
    mark_handed_off_many,
    mark_outcome_unknown,
    park_for_retry,
    release_claims,
    renew_claims,
    reset_for_resend,
)
from delivery.lifecycle.reducer import reduce_send
from delivery.lifecycle.refs import (
    ACTOR,
    EVENTS,
    SOFT_BOUNCE_SUPPRESSION_THRESHOLD,
    UNKNOWN_OUTCOME_DEADLINE,
    WEBHOOK_ENDPOINTS_ATTR,
    ComplaintHandler,
    CompletionHandler,
    RefKind,
    SendRef,
    _complaint_handlers,
    _completion_handlers,
    campaigns_on_hold,
    claim_lease,
    complaint_handlers,
    completion_handlers,
    model_for,
    orphan_after,
    redrive_lease,
    register_campaign_hold,
    register_complaint_handler,
    register_completion_handler,
)
from delivery.lifecycle.retry import campaign_failed_requeue, campaign_failed_retryable
from delivery.lifecycle.transitions import (
    CampaignSendLifecycle,
    Completion,
    TransactionalSendLifecycle,
    find_by_provider_message_id,
    send_transition,
    send_transition_many,
    transition_by_provider_message_id,
)

__all__ = [
    "ACTOR",
    "EVENTS",
    "SOFT_BOUNCE_SUPPRESSION_THRESHOLD",
    "UNKNOWN_OUTCOME_DEADLINE",
    "WEBHOOK_ENDPOINTS_ATTR",
    "CampaignSendLifecycle",
    "ClaimKeeper",
    "ComplaintHandler",
    "Completion",
    "CompletionHandler",
    "RefKind",
    "SendRef",
    "TransactionalSendLifecycle",
    "_complaint_handlers",
    "_completion_handlers",
    "campaign_failed_requeue",
    "campaign_failed_retryable",
    "campaigns_on_hold",
    "cancel_campaign_queued",
    "claim_lease",
    "claim_orphans",
    "claim_queued",
    "claim_sends",
    "claim_sends_topped_up",
    "complaint_handlers",
    "completion_handlers",
    "find_by_provider_message_id",
    "lease_orphans",
    "mark_handed_off",
    "mark_handed_off_many",
    "mark_outcome_unknown",
    "model_for",
    "orphan_after",
    "park_for_retry",
    "redrive_lease",
    "reduce_send",
    "register_campaign_hold",
    "register_complaint_handler",
    "register_completion_handler",
    "release_claims",
    "renew_claims",
    "reset_for_resend",
    "send_transition",
    "send_transition_many",
    "transition_by_provider_message_id",
]
