"""The only writer of `Campaign.status` (CMP-04 … CMP-10) on the kernel's runner (D-04).

`campaign_reduce` is the pure reducer (no database, no scheduling): `(state, to, input, actor, at)` →
patch, effects. `CampaignLifecycle.transition` locks the row, applies the self-loop policy (CMP-06: one audit
row, nothing else), calls the django-fsm transition, saves, and applies the effects in order in the same
transaction; the orchestrator hop is a task (or due task, D-05) enqueued with it.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from typing import Any

from campaigns.models import Campaign, CampaignStatus
from campaigns.queues import control_queue
from owlat.lifecycle import Analytics, Audit, Call, Decision, Enqueue, Lifecycle, Outcome, legal_edges

DRAFT, SCHEDULED, SENDING, SENT, CANCELLED, PENDING_REVIEW, PAUSED = (
    CampaignStatus.DRAFT.value,
    CampaignStatus.SCHEDULED.value,
    CampaignStatus.SENDING.value,
    CampaignStatus.SENT.value,
    CampaignStatus.CANCELLED.value,
    CampaignStatus.PENDING_REVIEW.value,
    CampaignStatus.PAUSED.value,
)

#: CMP-05, read from the django-fsm declaration on the model: the one constant holding the graph.
LEGAL_EDGES: frozenset[tuple[str, str]] = legal_edges(Campaign, "status")
TERMINAL = frozenset(s.value for s in CampaignStatus) - {frm for frm, _ in LEGAL_EDGES}

ORCHESTRATOR_TASK = "campaigns.tasks.campaign_send_start_task"

# CMP-10 actor tags
ACTOR_SCHEDULER = "system:scheduler_tick"
ACTOR_CONTENT_SCAN = "system:content_scan"
ACTOR_ORCHESTRATOR = "system:orchestrator"
ACTOR_COMPLETION = "system:send_completion"
ACTOR_LIFECYCLE = "system:campaign_lifecycle"
ACTOR_AUTO_WINNER = "system:auto_winner"

MESSAGES = {
    "campaign_not_found": "Campaign not found",
    "illegal_edge": "illegal_edge",
    "terminal": "terminal",
}

#: CMP-09: the audit action when arriving in a state (self-loops use the same table with from == to).
_ARRIVAL_ACTIONS = {
    SCHEDULED: "campaign.scheduled",
    CANCELLED: "campaign.cancelled",
    SENT: "campaign.sent",
    PENDING_REVIEW: "campaign.flagged_for_review",
    PAUSED: "campaign.paused",
}


def is_system_actor(actor: str) -> bool:
    """CMP-10: `system` or `system:<source>` never produces analytics."""
    return actor == "system" or actor.startswith("system:")


def audit_action(frm: str, to: str) -> str:
    """CMP-09."""
    if to == DRAFT:
        return {
            SCHEDULED: "campaign.unscheduled",
            SENDING: "campaign.content_blocked",
            PENDING_REVIEW: "campaign.review_rejected",
        }.get(frm, "campaign.updated")
    if to == SENDING:
        return {PENDING_REVIEW: "campaign.review_approved", PAUSED: "campaign.resumed"}.get(
            frm, "campaign.send_started"
        )
    return _ARRIVAL_ACTIONS[to]


def campaign_reduce(
    *,
    frm: str,
    to: str,
    campaign_id: str,
    is_ab_test: bool,
    input: dict[str, Any],
    actor: str,
    at: dt.datetime,
) -> Decision:
    """Pure reducer of CMP-05 … CMP-10 for a real (non self-loop) move. Trusts its input (CMP-21)."""
    if (frm, to) not in LEGAL_EDGES:
        return Decision.refuse("terminal" if frm in TERMINAL else "illegal_edge")
    patch: dict[str, Any] = {"status": to}
    details: dict[str, Any] = {"previousStatus": frm, "newStatus": to, "applied": "transitioned"}
    effects: list[Any] = []
    event: str | None = None
    if to == SCHEDULED:
        scheduled_at = input.get("scheduled_at")
        patch["scheduled_at"] = scheduled_at
        patch["use_recipient_timezone"] = bool(input.get("use_recipient_timezone", False))
        for key in ("scheduled_hour", "scheduled_minute"):
            if input.get(key) is not None:
                patch[key] = input[key]
        details["scheduledAt"] = scheduled_at.isoformat() if scheduled_at else None
        # delay = max(0, scheduled_at − at): a due task when in the future, immediate otherwise
        when = scheduled_at if scheduled_at and scheduled_at > at else None
        effects.append(Enqueue(ORCHESTRATOR_TASK, (campaign_id,), at=when, queue=control_queue()))
        event = "campaign_scheduled"
    elif to == DRAFT:
        if frm == SCHEDULED:
            patch["scheduled_at"] = None
        reason = input.get("content_block_reason")
        if reason:
            patch["content_block_reason"] = reason
            details["contentBlockReason"] = reason
    elif to == CANCELLED:
        patch["cancelled_at"] = at
        patch["scheduled_at"] = None
        event = "campaign_cancelled"
        if frm in (SENDING, PAUSED):  # the rows still waiting end `cancelled`, the walk stops for good
            effects.append(Call("cancel_send"))
    elif to == PAUSED:
        patch["paused_at"] = at
    elif frm == PAUSED:  # → sending again: the counters and the walk go on where they stopped
        patch["paused_at"] = None
        effects.append(Call("resume_send"))
    elif to == SENDING:
        patch.update(
            sent_at=at,
            scheduled_at=None,
            content_block_reason=None,
            stats_sent=0,
            stats_failed=0,
            stats_delivered=0,
            stats_opened=0,
            stats_clicked=0,
            stats_bounced=0,
            stats_hard_bounced=0,
            stats_soft_bounced=0,
            stats_unsubscribed=0,
            stats_updated_at=at,
        )
        effects.append(Call("reset_send_counters"))
        effects.append(Enqueue(ORCHESTRATOR_TASK, (campaign_id,), queue=control_queue()))
        if frm != PENDING_REVIEW:
            event = "campaign_sent"
        # An A/B test's window does not start here: the content scan and a review may hold the campaign
        # for longer than the window; the orchestrator starts it when it opens the test-cohort walk.
    effects.insert(0, Audit(audit_action(frm, to), details))
    if event and not is_system_actor(actor):
        effects.append(Analytics(event, {"campaignId": campaign_id}))
    return Decision.accept(patch, effects=effects)


def _resume_send(campaign: Campaign) -> None:
    """Resume: the rows still waiting go back to the pool, and a walk still resolving gets a fresh hop."""
    from campaigns.walker import walk_resume
    from delivery.services import campaign_sends_requeue

    campaign_sends_requeue(campaign.pk)
    walk_resume(campaign.pk)
    if campaign.is_ab_test and campaign.ab_winner:  # a remainder phase that found the campaign paused
        from campaigns.ab_lifecycle import REMAINDER_TASK
        from owlat.jobs import enqueue

        enqueue(REMAINDER_TASK, str(campaign.pk), queue=control_queue())


def _cancel_send(campaign: Campaign) -> None:
    from campaigns.walker import walk_stop
    from delivery.services import campaign_sends_cancel

    walk_stop(campaign.pk)
    campaign_sends_cancel(campaign.pk)


def campaigns_on_hold(campaign_ids: set[str]) -> set[str]:
    """The pool's hold check (registered with delivery): campaigns paused or cancelled hand out no rows."""
    held = Campaign.objects.filter(pk__in=list(campaign_ids), status__in=(PAUSED, CANCELLED))
    return {str(pk) for pk in held.values_list("pk", flat=True)}


def _reset_send_counters(campaign: Campaign) -> None:
    from delivery.services import campaign_counters_reset

    campaign_counters_reset(organization_id=campaign.organization_id, campaign_id=campaign.pk)


class CampaignLifecycle(Lifecycle):
    model = Campaign
    field = "status"
    resource = "campaign"
    not_found_reason = "campaign_not_found"
    messages = MESSAGES
    self_loop = "record"
    writes_audit = True

    def reduce(
        self, obj: Campaign, frm: str, to: str, *, input: dict[str, Any], actor: str, at: dt.datetime
    ) -> Decision:
        return campaign_reduce(
            frm=frm,
            to=to,
            campaign_id=str(obj.pk),
            is_ab_test=obj.is_ab_test,
            input=input,
            actor=actor,
            at=at,
        )

    def self_loop_audit_action(self, state: str) -> str | None:
        return audit_action(state, state)

    def effect_handlers(self) -> dict[str, Callable[..., None]]:
        return {
            "reset_send_counters": _reset_send_counters,
            "resume_send": _resume_send,
            "cancel_send": _cancel_send,
        }


def campaign_transition(
    *,
    campaign_id: Any,
    to: str,
    actor: str,
    input: dict[str, Any] | None = None,
    at: dt.datetime | None = None,
    organization_id: Any = None,
) -> Outcome:
    """CMP-05: the single writer of `status` and its companion fields. Never raises for business outcomes."""
    return CampaignLifecycle().transition(
        campaign_id, to, actor=actor, at=at, input=input, organization_id=organization_id
    )


def campaign_transition_locked(
    campaign: Campaign,
    to: str,
    *,
    actor: str,
    input: dict[str, Any] | None = None,
    at: dt.datetime | None = None,
) -> Outcome:
    """The same, on a row the caller locked inside its own transaction."""
    return CampaignLifecycle().transition_locked(campaign, to, actor=actor, input=input, at=at)
