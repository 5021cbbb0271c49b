"""The only writer of `Campaign.ab_test_status` and its companion fields (CMP-16, CMP-17) on the kernel's
runner (D-04). NULL is the synthetic state "none".

Effects: `schedule_auto_winner` on → `testing` (a due task after `testDuration` hours when the criteria are not
`manual`, D-05) and `schedule_winner_remainder` on → `winner_selected` (the remainder phase, CMP-33, now).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from typing import Any

from campaigns.models import AbTestStatus, Campaign
from campaigns.queues import control_queue
from owlat.lifecycle import Audit, Decision, Enqueue, Lifecycle, Outcome

NONE = None
PENDING, TESTING, WINNER_SELECTED = (
    AbTestStatus.PENDING.value,
    AbTestStatus.TESTING.value,
    AbTestStatus.WINNER_SELECTED.value,
)

#: CMP-16 graph (None = "none"); "any → none" is spelled out.
LEGAL_EDGES: frozenset[tuple[str | None, str | None]] = frozenset(
    {
        (NONE, PENDING),
        (PENDING, TESTING),
        (TESTING, WINNER_SELECTED),
        (PENDING, NONE),
        (TESTING, NONE),
        (WINNER_SELECTED, NONE),
    }
)

AUTO_WINNER_TASK = "campaigns.tasks.campaign_ab_auto_winner_task"
REMAINDER_TASK = "campaigns.tasks.campaign_send_remainder_task"

MESSAGES = {"campaign_not_found": "Campaign not found", "illegal_edge": "illegal_edge"}

_AUDIT = {
    PENDING: "ab_test.enabled",
    TESTING: "ab_test.testing_started",
    WINNER_SELECTED: "ab_test.winner_declared",
    NONE: "ab_test.disabled",
}


def ab_reduce(
    *,
    frm: str | None,
    to: str | None,
    campaign_id: str,
    config: dict[str, Any] | None,
    input: dict[str, Any],
    at: dt.datetime,
) -> Decision:
    """Pure reducer of CMP-16/17 for a real (non self-loop) move."""
    if (frm, to) not in LEGAL_EDGES:
        return Decision.refuse("illegal_edge")
    details: dict[str, Any] = {"previousStatus": frm, "newStatus": to, "applied": "transitioned"}
    effects: list[Any] = []
    patch: dict[str, Any] = {"ab_test_status": to}
    if to == PENDING:
        patch.update(
            is_ab_test=True, ab_test_config=dict(input["config"]), ab_winner=None, ab_winner_selected_at=None
        )
        details["config"] = dict(input["config"])
    elif to == TESTING:
        cfg = config or {}
        hours = cfg.get("testDuration") or 0
        if cfg.get("winnerCriteria") != "manual" and hours > 0:
            effects.append(
                Enqueue(
                    AUTO_WINNER_TASK,
                    (campaign_id,),
                    at=at + dt.timedelta(milliseconds=hours * 3_600_000),
                    queue=control_queue(),
                )
            )
    elif to == WINNER_SELECTED:
        winner = input["winner"]
        patch.update(ab_winner=winner, ab_winner_selected_at=at)
        details["winner"] = winner
        effects.append(Enqueue(REMAINDER_TASK, (campaign_id,), queue=control_queue()))
    else:  # → none
        patch.update(is_ab_test=False, ab_test_config=None, ab_winner=None, ab_winner_selected_at=None)
    effects.insert(0, Audit(_AUDIT[to], details))
    return Decision.accept(patch, effects=effects)


class AbLifecycle(Lifecycle):
    model = Campaign
    field = "ab_test_status"
    resource = "campaign"
    not_found_reason = "campaign_not_found"
    messages = MESSAGES
    self_loop = "record"
    writes_audit = True

    def reduce(
        self, obj: Campaign, frm: str, to: str, *, input: dict[str, Any], actor: str, at: dt.datetime
    ) -> Decision:
        return ab_reduce(frm=frm, to=to, campaign_id=str(obj.pk), config=obj.ab_config(), input=input, at=at)

    def self_loop_audit_action(self, state: str) -> str | None:
        return _AUDIT[state]

    def _fsm_method(self, obj: Any, frm: str, to: str) -> Callable[[dict], None]:
        if to is None:  # django-fsm spells a NULL target as a return value
            return obj.disable_ab_test
        return super()._fsm_method(obj, frm, to)


def ab_transition(
    *,
    campaign_id: Any,
    to: str | None,
    actor: str,
    input: dict[str, Any] | None = None,
    at: dt.datetime | None = None,
    organization_id: Any = None,
) -> Outcome:
    """CMP-16: the single writer of the A/B fields. Never raises for business outcomes."""
    return AbLifecycle().transition(
        campaign_id,
        to,  # type: ignore[arg-type]
        actor=actor,
        at=at,
        input=input,
        organization_id=organization_id,
    )
