"""The shape of an automation's step list, for the editor: where each step leads and which branches fall
through into another branch's steps (a yes branch that runs on into the no branch's mail because nothing ends
it). Pure functions over (step_type, config) in step order; the walker's rule is the same: a step goes on to
the next one unless a condition picks a target or an end step finishes the run."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from automations.models import StepType


@dataclass(frozen=True)
class FlowStep:
    index: int
    step_type: str
    config: dict[str, Any]


@dataclass(frozen=True)
class FallThrough:
    condition_index: int
    branch: str  # "yes" or "no"
    start: int  # the first step of the branch that runs on
    into: int  # the first step of the other branch, reached without an end step
    into_branch: str

    @property
    def message(self) -> str:
        return (
            f"Step {self.condition_index}: the {self.branch} branch (from step {self.start}) continues into "
            f"the {self.into_branch} branch at step {self.into}, so those contacts also get the "
            f"{self.into_branch} branch's steps. Add an End step before step {self.into} to stop it there."
        )


def targets(step: FlowStep) -> dict[str, int]:
    """Where a step leads: {"yes": i, "no": j} for a condition, {"next": i} otherwise, {} for an end step."""
    if step.step_type == StepType.END:
        return {}
    if step.step_type == StepType.CONDITION:
        out = {}
        for key, label in (("yesBranchStepIndex", "yes"), ("noBranchStepIndex", "no")):
            value = step.config.get(key)
            out[label] = value if isinstance(value, int) and not isinstance(value, bool) else step.index + 1
        return out
    return {"next": step.index + 1}


def fall_throughs(steps: list[FlowStep]) -> list[FallThrough]:
    """Each condition branch that, following the steps in order, reaches the other branch's first step
    although the other branch has an email step ahead: its contacts would get that mail too."""
    by_index = {s.index: s for s in steps}
    found = []
    for step in steps:
        if step.step_type != StepType.CONDITION:
            continue
        t = targets(step)
        yes, no = t["yes"], t["no"]
        if yes == no:
            continue
        (first, first_name), (second, second_name) = sorted([(yes, "yes"), (no, "no")])
        if first <= step.index or not _reaches(by_index, first, second):
            continue
        if not _sends_mail(by_index, second):
            continue
        found.append(FallThrough(step.index, first_name, first, second, second_name))
    return found


def _reaches(by_index: dict[int, FlowStep], start: int, goal: int) -> bool:
    """Whether running from `start` in order arrives at `goal` (no end step, no condition jumping past it)."""
    i, seen = start, set()
    while i in by_index and i not in seen:
        if i == goal:
            return True
        seen.add(i)
        nxt = targets(by_index[i])
        if not nxt:
            return False
        if "next" in nxt:
            i = nxt["next"]
        else:
            return goal in (nxt["yes"], nxt["no"])
    return i == goal


def _sends_mail(by_index: dict[int, FlowStep], start: int) -> bool:
    i, seen = start, set()
    while i in by_index and i not in seen:
        seen.add(i)
        step = by_index[i]
        if step.step_type == StepType.EMAIL:
            return True
        nxt = targets(step)
        if "next" not in nxt:
            return bool(nxt) and any(_sends_mail(by_index, j) for j in nxt.values() if j not in seen)
        i = nxt["next"]
    return False


def flow_of(automation: Any) -> list[FlowStep]:
    from automations.models import AutomationStep

    return [
        FlowStep(s.step_index, s.step_type, s.config or {})
        for s in AutomationStep.objects.filter(
            automation_id=automation.pk, organization_id=automation.organization_id
        ).order_by("step_index")
    ]
