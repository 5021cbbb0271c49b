"""What the automation's lifecycle buttons say before they act (`owlat.admin_confirm`): Activate names the
trigger that enrols contacts and the steps they get; Pause says what happens to the runs in progress."""

from __future__ import annotations

from automations.models import Automation, AutomationStatus, RunStatus
from owlat.admin_confirm import Confirmation

#: the buttons that go to a confirmation page first (GET shows it, its POST acts)
CONFIRMED_VERBS = ("activate", "pause", "resume")

TRIGGERS = {
    "contact_created": "a contact is created",
    "contact_updated": "a contact is updated",
    "event_received": "an event is received for a contact",
    "topic_subscribed": "a contact subscribes to a topic",
}


def _trigger(automation: Automation) -> str:
    what = TRIGGERS.get(automation.trigger_type, automation.trigger_type)
    cfg = automation.trigger_config or {}
    if automation.trigger_type == "event_received" and cfg.get("eventName"):
        what = f'an event "{cfg["eventName"]}" is received for a contact'
    return what


def automation_confirmation(automation: Automation, verb: str) -> Confirmation | None:
    """The confirmation of `verb` on `automation`, or None when the verb acts without one."""
    if verb not in CONFIRMED_VERBS:
        return None
    steps = list(automation.steps.values_list("step_type", flat=True))
    emails = sum(1 for s in steps if s == "email")
    running = automation.runs.filter(status=RunStatus.RUNNING).count()
    facts = [
        ("Trigger", _trigger(automation)),
        ("Steps", f"{len(steps)} ({emails} email{'' if emails == 1 else 's'})"),
    ]
    if verb in ("activate", "resume"):
        again = "again " if automation.status == AutomationStatus.PAUSED else ""
        return Confirmation(
            title="Activate this automation?" if verb == "activate" else "Resume this automation?",
            label="Activate" if verb == "activate" else "Resume",
            consequences=[
                f"From now on, each time {_trigger(automation)}, that contact {again}enters it and gets its "
                f"{len(steps)} steps ({emails} email{'' if emails == 1 else 's'}).",
                "Contacts who triggered it before now are not enrolled. While it is active its trigger and "
                "steps are locked: pause it to change them.",
            ],
            facts=facts,
        )
    return Confirmation(
        title="Pause this automation?",
        label="Pause",
        consequences=[
            "No new contacts enter it while it is paused.",
            f"Its {running} runs in progress end (cancelled) when they reach their next step; resuming "
            "does not bring them back.",
        ],
        facts=[*facts, ("Runs in progress", running)],
        danger=True,
    )
