"""The automation status lifecycle (AUT-06 … AUT-13) and the circuit breaker (AUT-27).

`AutomationLifecycle` on the shared runner (D-04) with a pure reducer (`automation_reduce`), and the public
actions `automation_activate|pause|resume|revert_to_draft`. The lifecycle never touches counters (AUT-05).
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from django.db import transaction
from django.db.models import F

from automations.models import Automation, AutomationStatus, AutomationStep, TriggerType
from owlat.lifecycle import Analytics, Audit, Decision, Lifecycle, Outcome, legal_edges
from owlat.permissions import Authority, authority_allows

DRAFT, ACTIVE, PAUSED = (
    AutomationStatus.DRAFT.value,
    AutomationStatus.ACTIVE.value,
    AutomationStatus.PAUSED.value,
)

#: AUT-07, read from the django-fsm declaration on the model: the one constant holding the graph.
LEGAL_EDGES: frozenset[tuple[str, str]] = legal_edges(Automation, "status")

BREAKER_ACTOR = "system:automation-breaker"
AUTOMATION_FAILURE_BREAKER_THRESHOLD = 5

MESSAGES = {
    "automation_not_found": "Automation not found",
    "illegal_edge": "Automation is not in a state that allows this transition",
    "no_steps": "Automation must have at least one step to be activated",
    "invalid_trigger_config": "Automation trigger is missing required configuration",
}

#: AUT-12 per edge: (audit action, analytics event).
EDGE_EFFECTS: dict[tuple[str, str], tuple[str, str]] = {
    (DRAFT, ACTIVE): ("automation.activated", "automation_activated"),
    (ACTIVE, PAUSED): ("automation.paused", "automation_paused"),
    (PAUSED, ACTIVE): ("automation.resumed", "automation_resumed"),
    (PAUSED, DRAFT): ("automation.reverted_to_draft", "automation_reverted_to_draft"),
}

#: AUT-10: a self-loop is audited with the action for arriving in `to` from a non-paused state.
SELF_LOOP_AUDIT_ACTIONS = {
    ACTIVE: "automation.activated",
    PAUSED: "automation.paused",
    DRAFT: "automation.reverted_to_draft",
}

#: AUT-15: the key each trigger kind needs in `trigger_config` (contact_created needs none).
TRIGGER_CONFIG_KEYS = {
    TriggerType.CONTACT_UPDATED.value: "propertyKey",
    TriggerType.EVENT_RECEIVED.value: "eventName",
    TriggerType.TOPIC_SUBSCRIBED.value: "topicId",
}


def trigger_config_ok(trigger_type: str, trigger_config: Any) -> bool:
    """AUT-09 (2): the config the trigger kind needs is present (a non-empty string under its key)."""
    key = TRIGGER_CONFIG_KEYS.get(trigger_type)
    if key is None:
        return True
    return (
        isinstance(trigger_config, dict)
        and isinstance(trigger_config.get(key), str)
        and bool(trigger_config[key])
    )


def automation_reduce(
    *,
    frm: str,
    to: str,
    automation_id: str,
    step_count: int,
    trigger_type: str,
    trigger_config: Any,
    at: dt.datetime,
) -> Decision:
    """Pure reducer of AUT-07 … AUT-12 for a real (non self-loop) move."""
    if (frm, to) not in LEGAL_EDGES:
        return Decision.refuse("illegal_edge")
    if to == ACTIVE:
        if step_count < 1:
            return Decision.refuse("no_steps")
        if not trigger_config_ok(trigger_type, trigger_config):
            return Decision.refuse("invalid_trigger_config")
        patch: dict[str, Any] = {"status": ACTIVE, "paused_at": None, "consecutive_run_failures": 0}
        if frm == DRAFT:
            patch["activated_at"] = at
    elif to == PAUSED:
        patch = {"status": PAUSED, "paused_at": at}
    else:  # DRAFT
        patch = {"status": DRAFT, "activated_at": None, "paused_at": None}
    audit_action, event = EDGE_EFFECTS[(frm, to)]
    return Decision.accept(
        patch,
        effects=(
            Audit(audit_action, {"previousStatus": frm, "newStatus": to, "applied": "transitioned"}),
            Analytics(event, {"automationId": automation_id}),
        ),
    )


class AutomationLifecycle(Lifecycle):
    model = Automation
    field = "status"
    resource = "automation"
    not_found_reason = "automation_not_found"
    messages = MESSAGES
    self_loop = "record"
    writes_audit = True

    def reduce(
        self, obj: Automation, frm: str, to: str, *, input: dict[str, Any], actor: str, at: dt.datetime
    ) -> Decision:
        step_count = AutomationStep.objects.filter(automation_id=obj.pk).count() if to == ACTIVE else 0
        return automation_reduce(
            frm=frm,
            to=to,
            automation_id=str(obj.pk),
            step_count=step_count,
            trigger_type=obj.trigger_type,
            trigger_config=obj.trigger_config,
            at=at,
        )

    def self_loop_audit_action(self, state: str) -> str | None:
        return SELF_LOOP_AUDIT_ACTIONS.get(state)


def automation_transition(
    *,
    automation_id: Any,
    to: str,
    actor: str,
    at: dt.datetime | None = None,
    organization_id: Any = None,
) -> Outcome:
    """AUT-06: the single writer of `status`, `activated_at`, `paused_at`. Never raises for business outcomes."""
    return AutomationLifecycle().transition(
        automation_id, to, actor=actor, at=at, organization_id=organization_id
    )


# --- Public actions (AUT-13) ---------------------------------------------------------------------------------

ACTION_TARGETS = {
    "activate": ACTIVE,
    "pause": PAUSED,
    "resume": ACTIVE,
    "revert to draft": DRAFT,
}


def _guarded(
    action: str, *, automation_id: Any, organization_id: Any, actor: str, authority: Authority
) -> Outcome:
    from owlat.flags import feature_disabled_message, flag_enabled

    allowed = authority_allows(authority, "automations:manage")  # first: raises unless an Authority is given
    if not flag_enabled(organization_id, "automations"):
        return Outcome(ok=False, reason="feature_disabled", message=feature_disabled_message("automations"))
    if not allowed:
        return Outcome(
            ok=False, reason="forbidden", message=f"Only owners and admins can {action} automations"
        )
    return automation_transition(
        automation_id=automation_id, to=ACTION_TARGETS[action], actor=actor, organization_id=organization_id
    )


def automation_activate(
    *, automation_id: Any, organization_id: Any, actor: str, authority: Authority
) -> Outcome:
    """`authority` is required: a member's role, or an explicitly named upstream grant (owlat.permissions)."""
    return _guarded(
        "activate",
        automation_id=automation_id,
        organization_id=organization_id,
        actor=actor,
        authority=authority,
    )


def automation_pause(
    *, automation_id: Any, organization_id: Any, actor: str, authority: Authority
) -> Outcome:
    return _guarded(
        "pause",
        automation_id=automation_id,
        organization_id=organization_id,
        actor=actor,
        authority=authority,
    )


def automation_resume(
    *, automation_id: Any, organization_id: Any, actor: str, authority: Authority
) -> Outcome:
    return _guarded(
        "resume",
        automation_id=automation_id,
        organization_id=organization_id,
        actor=actor,
        authority=authority,
    )


def automation_revert_to_draft(
    *, automation_id: Any, organization_id: Any, actor: str, authority: Authority
) -> Outcome:
    return _guarded(
        "revert to draft",
        automation_id=automation_id,
        organization_id=organization_id,
        actor=actor,
        authority=authority,
    )


PUBLIC_ACTIONS = {
    "activate": automation_activate,
    "pause": automation_pause,
    "resume": automation_resume,
    "revert-to-draft": automation_revert_to_draft,
}


# --- Circuit breaker (AUT-27) ---------------------------------------------------------------------------------


def automation_record_run_failure(automation_id: Any, *, at: dt.datetime | None = None) -> bool:
    """Count one failed run; pause the automation at the threshold. Returns True when the breaker tripped."""
    with transaction.atomic(savepoint=False):
        updated = Automation.objects.filter(pk=automation_id).update(
            consecutive_run_failures=F("consecutive_run_failures") + 1
        )
        if not updated:
            return False
        automation = Automation.objects.select_for_update().get(pk=automation_id)
        if (
            automation.consecutive_run_failures >= AUTOMATION_FAILURE_BREAKER_THRESHOLD
            and automation.status == ACTIVE
        ):
            outcome = AutomationLifecycle().transition_locked(automation, PAUSED, actor=BREAKER_ACTOR, at=at)
            return outcome.ok and outcome.applied == "transitioned"
    return False
