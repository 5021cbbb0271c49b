"""Step kinds (AUT-19, AUT-31 … AUT-33). The walker reaches a kind only through `step_module_for`.

Each module offers `parse_config(config) -> typed config` (raises `StepConfigError`),
`execute(ctx, config) -> StepOutcome` and optionally `entry_delay(config) -> timedelta`. A module may also offer
`execute_many([(ctx, config), …]) -> [StepOutcome | Exception, …]` (a batch of the walker, one result per item,
an exception standing for that item alone) and `commit_many([outcome.pending, …])` (writes the prepared work
of the items whose completion was applied, inside the walker's transaction).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from types import ModuleType
from typing import Any, Literal

#: The `next_step_index` of a step that ends the run: an index no step has, so the walker completes the run there.
END_OF_RUN = -1


class StepConfigError(ValueError):
    """An invalid step config; `field` is the key at fault (relative to `config`)."""

    def __init__(self, message: str, field: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.field = field


@dataclass(frozen=True)
class StepContext:
    organization_id: str
    automation_id: str
    run_id: str
    step_run_id: str
    contact_id: str
    step_index: int
    now: dt.datetime
    #: The contact as the walker loaded it for its batch (a module must not read it again); None: read it.
    contact: Any = None


@dataclass(frozen=True)
class StepOutcome:
    status: Literal["completed", "failed"]
    email_send_id: str | None = None
    next_step_index: int | None = None
    error: str | None = None
    note: str | None = None
    #: Work the walker hands back to the module's `commit_many` once the completion is applied (e.g. the email
    #: step's prepared send row), so a step that loses its completion writes nothing.
    pending: Any = None

    @classmethod
    def completed(cls, **kwargs: Any) -> StepOutcome:
        return cls(status="completed", **kwargs)

    @classmethod
    def failed(cls, error: str) -> StepOutcome:
        return cls(status="failed", error=error)


def step_module_for(step_type: str) -> ModuleType:
    from automations.steps import condition, delay, email, end

    modules = {"email": email, "delay": delay, "condition": condition, "end": end}
    try:
        return modules[step_type]
    except KeyError:
        raise StepConfigError(f"Unknown step type {step_type!r}", "stepType") from None


def entry_delay(step_type: str, config: Any) -> dt.timedelta:
    """The wait before a step of this kind is dispatched (AUT-24); zero for kinds without one."""
    module = step_module_for(step_type)
    fn = getattr(module, "entry_delay", None)
    if fn is None:
        return dt.timedelta(0)
    return fn(module.parse_config(config))


def validate_step_config(step_type: str, config: Any) -> dict[str, Any]:
    """Parse a config for storage (API, admin); returns the canonical dict. Raises `StepConfigError`."""
    module = step_module_for(step_type)
    return module.canonical_config(module.parse_config(config))
