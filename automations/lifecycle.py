"""The only writer of every status in the automations app.

- `Automation.status` (AUT-06 … AUT-13): `AutomationLifecycle` on the shared runner (D-04) with a pure reducer
  (`automation_reduce`), and the public actions `automation_activate|pause|resume|revert_to_draft`.
- `AutomationRun.status` (AUT-28): `run_open`, `run_complete`, `run_cancel`.
- `AutomationStepRun.status` (AUT-04, AUT-21): `step_run_create`, the compare-and-set claim `step_run_claim`,
  `step_run_complete`, `step_run_fail`. Every step-run status change moves one unit between the per-step
  counters of AUT-02 (creation +1, floor 0).
- The circuit breaker (AUT-27): `automation_record_run_failure`.
Counters are atomic single-row increments (AUT-05); the automation lifecycle never touches them.
The run and step-run writers join the caller's transaction without a savepoint (`savepoint=False`): they are
all-or-nothing with the walker step that calls them, and a step is a few queries cheaper.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from django.db import transaction
from django.db.models import F, Value
from django.db.models.functions import Greatest
from django.utils import timezone

from automations.models import (
    Automation,
    AutomationRun,
    AutomationStatus,
    AutomationStep,
    AutomationStepRun,
    RunStatus,
    StepRunStatus,
    TriggerType,
)
from owlat.lifecycle import Analytics, Audit, Decision, Lifecycle, Outcome, legal_edges

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
    action: str, *, automation_id: Any, organization_id: Any, actor: str, role: str | None
) -> Outcome:
    from owlat.flags import feature_disabled_message, flag_enabled
    from owlat.permissions import has_permission

    if not flag_enabled(organization_id, "automations"):
        return Outcome(ok=False, reason="feature_disabled", message=feature_disabled_message("automations"))
    # `role` is given for organization members (admin screens); API keys and operators are checked upstream.
    if role is not None and not has_permission(role, "automations:manage"):
        return Outcome(
            ok=False, reason="forbidden", message=f"Only owners and admins can {action} automations"
        )
    return automation_transition(
        automation_id=automation_id, to=ACTION_TARGETS[action], actor=actor, organization_id=organization_id
    )


def automation_activate(
    *, automation_id: Any, organization_id: Any, actor: str, role: str | None = None
) -> Outcome:
    return _guarded(
        "activate", automation_id=automation_id, organization_id=organization_id, actor=actor, role=role
    )


def automation_pause(
    *, automation_id: Any, organization_id: Any, actor: str, role: str | None = None
) -> Outcome:
    return _guarded(
        "pause", automation_id=automation_id, organization_id=organization_id, actor=actor, role=role
    )


def automation_resume(
    *, automation_id: Any, organization_id: Any, actor: str, role: str | None = None
) -> Outcome:
    return _guarded(
        "resume", automation_id=automation_id, organization_id=organization_id, actor=actor, role=role
    )


def automation_revert_to_draft(
    *, automation_id: Any, organization_id: Any, actor: str, role: str | None = None
) -> Outcome:
    return _guarded(
        "revert to draft",
        automation_id=automation_id,
        organization_id=organization_id,
        actor=actor,
        role=role,
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


# --- Counters (AUT-05, AUT-02) ----------------------------------------------------------------------------------


def _bump_automation(automation_id: Any, field: str, at: dt.datetime, **extra: Any) -> None:
    Automation.objects.filter(pk=automation_id).update(**{field: F(field) + 1}, stats_updated_at=at, **extra)


def _step_counter_add(step_id: Any, status: str) -> None:
    if step_id is not None:
        AutomationStep.objects.filter(pk=step_id).update(**{f"stat_{status}": F(f"stat_{status}") + 1})


def _step_counter_move(step_id: Any, frm: str, to: str) -> None:
    if step_id is None or frm == to:
        return
    AutomationStep.objects.filter(pk=step_id).update(
        **{
            f"stat_{frm}": Greatest(F(f"stat_{frm}") - 1, Value(0)),
            f"stat_{to}": F(f"stat_{to}") + 1,
        }
    )


# --- Runs (AUT-03, AUT-17, AUT-28) ------------------------------------------------------------------------------


def run_open(
    *,
    automation: Automation,
    contact_id: Any,
    triggered_by: str,
    trigger_data: dict[str, Any] | None,
    at: dt.datetime,
) -> AutomationRun | None:
    """Insert a `running` run and count it as entered; None when the contact already has a running run.

    The partial unique index (AUT-17) decides races: the loser's insert fails inside a savepoint.
    """
    from django.db import IntegrityError

    try:
        with transaction.atomic():
            run = AutomationRun.objects.create(
                organization_id=automation.organization_id,
                automation=automation,
                contact_id=contact_id,
                current_step_index=0,
                triggered_by=triggered_by,
                trigger_data=trigger_data,
                started_at=at,
            )
    except IntegrityError:
        return None
    _bump_automation(automation.pk, "stats_entered", at)
    return run


def _run_finish(run_id: Any, to: str, *, at: dt.datetime) -> bool:
    with transaction.atomic(savepoint=False):
        run = AutomationRun.objects.select_for_update().filter(pk=run_id).first()
        if run is None or run.status != RunStatus.RUNNING:
            return False  # AUT-28: duplicates are no-ops
        patch = {"completed_at": at, "next_step_at": None}
        if to == RunStatus.COMPLETED:
            run.complete(patch)
        else:
            run.cancel(patch)
        run.save(update_fields=["status", "completed_at", "next_step_at"])
        if to == RunStatus.COMPLETED:
            _bump_automation(run.automation_id, "stats_completed", at)
            # AUT-27: a completed run resets the breaker counter.
            Automation.objects.filter(pk=run.automation_id, consecutive_run_failures__gt=0).update(
                consecutive_run_failures=0
            )
        else:
            _bump_automation(run.automation_id, "stats_cancelled", at)
    return True


def run_complete(run_id: Any, *, at: dt.datetime | None = None) -> bool:
    return _run_finish(run_id, RunStatus.COMPLETED, at=at or timezone.now())


def run_cancel(run_id: Any, *, at: dt.datetime | None = None) -> bool:
    return _run_finish(run_id, RunStatus.CANCELLED, at=at or timezone.now())


# --- Step runs (AUT-04, AUT-21, AUT-23) --------------------------------------------------------------------------


def step_run_create(
    *,
    run: AutomationRun,
    step: AutomationStep,
    scheduled_at: dt.datetime,
    delay_until: dt.datetime | None = None,
    skipped: bool = False,
) -> AutomationStepRun:
    """A `pending` step run (or a terminal `skipped` one for a forward branch, AUT-23); counts +1."""
    status = StepRunStatus.SKIPPED if skipped else StepRunStatus.PENDING
    step_run = AutomationStepRun.objects.create(
        organization_id=run.organization_id,
        run=run,
        step=step,
        step_index=step.step_index,
        step_type=step.step_type,
        status=status,
        scheduled_at=scheduled_at,
        delay_until=delay_until,
        completed_at=scheduled_at if skipped else None,
    )
    _step_counter_add(step.pk, status)
    return step_run


def step_run_claim(step_run_id: Any, *, run_id: Any, at: dt.datetime, step_id: Any = None) -> int | None:
    """AUT-21 compare-and-set `pending → executing`; the winner also counts the execution on the run.

    Returns the run's new `steps_executed` for the winner, None for every loser.
    """
    with transaction.atomic(savepoint=False):
        won = AutomationStepRun.objects.filter(
            pk=step_run_id, run_id=run_id, status=StepRunStatus.PENDING
        ).update(status=StepRunStatus.EXECUTING, started_at=at)
        if not won:
            return None
        AutomationRun.objects.filter(pk=run_id).update(steps_executed=F("steps_executed") + 1)
        if step_id is None:
            step_id = (
                AutomationStepRun.objects.filter(pk=step_run_id).values_list("step_id", flat=True).first()
            )
        _step_counter_move(step_id, StepRunStatus.PENDING, StepRunStatus.EXECUTING)
        return AutomationRun.objects.filter(pk=run_id).values_list("steps_executed", flat=True).first()


_TERMINAL_MARKS = (StepRunStatus.COMPLETED, StepRunStatus.FAILED)


def step_run_complete(
    step_run_id: Any, *, at: dt.datetime, email_send_id: str | None = None, note: str | None = None
) -> bool:
    """`executing → completed` (AUT-20 step 6); ignored if already completed or failed."""
    with transaction.atomic(savepoint=False):
        sr = AutomationStepRun.objects.select_for_update().filter(pk=step_run_id).first()
        if sr is None or sr.status != StepRunStatus.EXECUTING:
            return False
        sr.complete({"completed_at": at, "email_send_id": email_send_id, "note": note})
        sr.save(update_fields=["status", "completed_at", "email_send_id", "note"])
        _step_counter_move(sr.step_id, StepRunStatus.EXECUTING, StepRunStatus.COMPLETED)
    return True


def step_run_fail(step_run_id: Any, *, at: dt.datetime, error: str, retry_count: int | None = None) -> bool:
    """`pending|executing → failed` with the error; ignored if already completed or failed (AUT-21)."""
    with transaction.atomic(savepoint=False):
        sr = AutomationStepRun.objects.select_for_update().filter(pk=step_run_id).first()
        if sr is None or sr.status in _TERMINAL_MARKS or sr.status == StepRunStatus.SKIPPED:
            return False
        frm = sr.status
        patch: dict[str, Any] = {"completed_at": at, "error_message": error}
        if retry_count is not None:
            patch["retry_count"] = retry_count
        sr.fail(patch)
        sr.save(update_fields=["status", *patch.keys()])
        _step_counter_move(sr.step_id, frm, StepRunStatus.FAILED)
    return True


def step_run_note_retry(step_run_id: Any, *, retry_count: int, error: str) -> None:
    """Record a scheduled retry on a step run that stays `executing` (AUT-26); not a status change."""
    AutomationStepRun.objects.filter(pk=step_run_id, status=StepRunStatus.EXECUTING).update(
        retry_count=retry_count, error_message=error
    )
