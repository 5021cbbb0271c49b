"""Simulate an automation for one contact: the steps the walker would run for them, in order — each condition
evaluated with the contact's actual values and the branch it takes, each wait with the instant it ends, each
email with the subject it would carry or the reason it would be skipped — without sending or writing anything.

The walk follows the walker's rules (`automations.flow.targets`, `automations.walker.MAX_STEPS_PER_RUN`): a step
goes on to the next one unless a condition picks a target or an end step finishes the run; an index no step has
completes the run. Email steps go through delivery's batch preparation (`automation_email_prepare_many`), which
reads templates, senders and suppressions and writes nothing, so the answer is the one a real run would get now.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import Any

from django.utils import timezone

from automations.flow import FlowStep, flow_of, targets
from automations.models import Automation, AutomationStatus, StepType


@dataclass(frozen=True)
class SimulatedStep:
    """One step the contact would go through. `outcome` is one of `would_send`, `skipped`, `fails`, `waits`,
    `yes`, `no`, `ends`; `detail` holds what the operator reads (the subject, the values compared, …)."""

    index: int
    step_type: str
    at: dt.datetime
    outcome: str
    summary: str
    detail: dict[str, Any] = field(default_factory=dict)
    next_index: int | None = None


@dataclass(frozen=True)
class Simulation:
    automation_id: str
    contact_id: str
    email: str
    steps: list[SimulatedStep]
    #: why the walk stopped: `completed`, `ended` (an end step), `failed` (a step would fail), `loop_cap`
    end: str
    #: what a real run would meet first, before any step (the automation not active, the contact deleted), or ""
    warning: str = ""


def automation_simulate(
    *, automation: Automation, contact: Any, now: dt.datetime | None = None
) -> Simulation:
    """The walk of `automation` for `contact` (both of one organization; the caller checks the tenancy)."""
    from automations.walker import MAX_STEPS_PER_RUN

    if contact.organization_id != automation.organization_id:
        raise ValueError("contact and automation belong to different organizations")
    at = now or timezone.now()
    by_index = {s.index: s for s in flow_of(automation)}
    walked: list[SimulatedStep] = []
    index, end = 0, "completed"
    while index in by_index:
        if len(walked) >= MAX_STEPS_PER_RUN:
            end = "loop_cap"
            break
        step = _simulate_step(by_index[index], automation, contact, at)
        walked.append(step)
        at = step.at
        if step.outcome in ("fails", "ends"):
            end = "failed" if step.outcome == "fails" else "ended"
            break
        index = step.next_index if step.next_index is not None else index + 1
    return Simulation(
        automation_id=str(automation.pk),
        contact_id=str(contact.pk),
        email=contact.email or "",
        steps=walked,
        end=end,
        warning=_warning(automation, contact),
    )


def _warning(automation: Automation, contact: Any) -> str:
    if contact.deleted_at is not None:
        return "The contact is deleted: a real run would stop before its first step."
    if automation.status != AutomationStatus.ACTIVE:
        return (
            f"The automation is {automation.get_status_display().lower()}: no run starts until it is activated "
            "(this simulation shows what would happen once it is)."
        )
    return ""


def _simulate_step(step: FlowStep, automation: Automation, contact: Any, at: dt.datetime) -> SimulatedStep:
    from automations.steps import StepConfigError, entry_delay

    try:
        wait = entry_delay(step.step_type, step.config)
    except StepConfigError as exc:
        return SimulatedStep(step.index, step.step_type, at, "fails", f"Invalid settings: {exc.message}")
    at = at + wait
    if step.step_type == StepType.DELAY:
        return SimulatedStep(
            step.index, step.step_type, at, "waits", f"Waits {_duration(wait)}, until {_when(at)}",
            {"waitSeconds": int(wait.total_seconds())},
        )  # fmt: skip
    if step.step_type == StepType.END:
        return SimulatedStep(step.index, step.step_type, at, "ends", "The run ends here")
    if step.step_type == StepType.CONDITION:
        return _condition(step, contact, at)
    return _email(step, automation, contact, at)


def _email(step: FlowStep, automation: Automation, contact: Any, at: dt.datetime) -> SimulatedStep:
    from delivery.services import AutomationEmailRequest, automation_email_prepare_many

    (result,) = automation_email_prepare_many(
        [
            AutomationEmailRequest(
                organization_id=str(automation.organization_id),
                contact_id=str(contact.pk),
                automation_id=str(automation.pk),
                email_template_id=step.config.get("emailTemplateId"),
                subject_override=step.config.get("subjectOverride"),
                contact=contact,
            )
        ]
    )
    if result.status == "queued":
        send = result.send
        detail = {"subject": send.subject, "to": send.email, "from": send.from_email}
        return SimulatedStep(
            step.index,
            step.step_type,
            at,
            "would_send",
            f"Would send “{send.subject}” to {send.email}",
            detail,
        )
    if result.status == "skipped":
        return SimulatedStep(
            step.index, step.step_type, at, "skipped", f"Skipped: {result.reason}", {"reason": result.reason}
        )
    return SimulatedStep(
        step.index, step.step_type, at, "fails", f"Would fail: {result.reason}", {"reason": result.reason}
    )


def _condition(step: FlowStep, contact: Any, at: dt.datetime) -> SimulatedStep:
    from owlat.conditions import ConditionError, evaluate_condition, parse_condition

    try:
        condition = parse_condition(step.config.get("condition"))
        yes = evaluate_condition(condition, contact)
    except ConditionError as exc:
        return SimulatedStep(step.index, step.step_type, at, "fails", f"Invalid condition: {exc.message}")
    branch = "yes" if yes else "no"
    nxt = targets(step)[branch]
    described = describe_condition(condition, contact)
    return SimulatedStep(
        step.index,
        step.step_type,
        at,
        branch,
        f"{described['test']} — {described['actual']}: {branch}, on to step {nxt}",
        {**described, "result": yes},
        next_index=nxt,
    )


def describe_condition(condition: Any, contact: Any) -> dict[str, str]:
    """What the condition tests, in words, and the contact's actual value or state."""
    from owlat.conditions.evaluate import contact_field_value
    from owlat.conditions.language import ABSENT, ActivityCondition, PropertyCondition, TopicCondition

    if isinstance(condition, PropertyCondition):
        actual = contact_field_value(contact, condition.field)
        expected = "" if condition.value is ABSENT else f" {condition.value!r}"
        shown = "no value" if actual is ABSENT or actual == "" else repr(actual)
        return {
            "test": f"{condition.field} {condition.operator.replace('_', ' ')}{expected}",
            "actual": f"the contact's {condition.field} is {shown}",
        }
    if isinstance(condition, ActivityCondition):
        return {
            "test": f"has {'' if condition.operator == 'is_true' else 'not '}{condition.field} an email",
            "actual": f"the contact has {'' if _activity(condition, contact) else 'never '}{condition.field} one",
        }
    if isinstance(condition, TopicCondition):
        return _membership(condition.topic_id, condition.operator, contact, "topic")
    return _membership(condition.form_id, condition.operator, contact, "form")


def _activity(condition: Any, contact: Any) -> bool:
    from owlat.conditions.language import ACTIVITY_COLUMNS

    return bool(getattr(contact, ACTIVITY_COLUMNS[condition.field]))


def _membership(target_id: str, operator: str, contact: Any, kind: str) -> dict[str, str]:
    from owlat.conditions import evaluate_condition
    from owlat.models import SignupForm, Topic

    model = Topic if kind == "topic" else SignupForm
    row = model.objects.filter(organization_id=contact.organization_id, pk=_uuid(target_id)).first()
    name = f"“{row.name}”" if row is not None else "(deleted)"
    condition = (
        {"kind": "topic_membership", "topicId": target_id, "operator": "equals"}
        if kind == "topic"
        else {"kind": "signup_form", "formId": target_id, "operator": "equals"}
    )
    member = evaluate_condition(condition, contact)
    verb = "is a member of topic" if kind == "topic" else "joined through form"
    negated = "is not a member of topic" if kind == "topic" else "did not join through form"
    return {
        "test": f"{verb if operator == 'equals' else negated} {name}",
        "actual": f"the contact {verb if member else negated} {name}",
    }


def _uuid(value: str) -> Any:
    import uuid

    try:
        return uuid.UUID(str(value))
    except ValueError:
        return None


def _duration(delta: dt.timedelta) -> str:
    seconds = int(delta.total_seconds())
    for unit, size in (("week", 604_800), ("day", 86_400), ("hour", 3_600), ("minute", 60)):
        if seconds >= size and seconds % size == 0:
            n = seconds // size
            return f"{n} {unit}{'s' if n != 1 else ''}"
    return f"{seconds // 60} minutes"


def _when(at: dt.datetime) -> str:
    return timezone.localtime(at).strftime("%Y-%m-%d %H:%M %Z")
