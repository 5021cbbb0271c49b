"""End step: the run completes here, so a branch stops where the operator put it (no fall-through into the
steps after it). No settings."""

from __future__ import annotations

from typing import Any

from automations.steps import END_OF_RUN, StepConfigError, StepContext, StepOutcome


def parse_config(config: Any) -> dict[str, Any]:
    if config in (None, {}):
        return {}
    if not isinstance(config, dict):
        raise StepConfigError("End config must be an object", None)
    return {}


def canonical_config(config: dict[str, Any]) -> dict[str, Any]:
    return {}


def execute(ctx: StepContext, config: dict[str, Any]) -> StepOutcome:
    return StepOutcome.completed(next_step_index=END_OF_RUN, note="end step")
