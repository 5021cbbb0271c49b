"""Delay step (AUT-32): the wait is its entry delay; `execute` completes immediately (AUT-24)."""

from __future__ import annotations

import datetime as dt
import math
from dataclasses import dataclass
from typing import Any

from automations.steps import StepConfigError, StepContext, StepOutcome

UNIT_MS = {"minutes": 60_000, "hours": 3_600_000, "days": 86_400_000, "weeks": 604_800_000}


@dataclass(frozen=True)
class DelayConfig:
    duration: float
    unit: str


def parse_config(config: Any) -> DelayConfig:
    if not isinstance(config, dict):
        raise StepConfigError("Delay config must be an object", None)
    duration = config.get("duration")
    if isinstance(duration, bool) or not isinstance(duration, int | float) or not math.isfinite(duration):
        raise StepConfigError("duration must be a number greater than 0", "duration")
    if duration <= 0:
        raise StepConfigError("duration must be a number greater than 0", "duration")
    unit = config.get("unit")
    if not isinstance(unit, str) or unit not in UNIT_MS:
        raise StepConfigError('unit must be one of "minutes", "hours", "days", "weeks"', "unit")
    return DelayConfig(duration=duration, unit=unit)


def canonical_config(config: DelayConfig) -> dict[str, Any]:
    return {"duration": config.duration, "unit": config.unit}


def delay_ms(config: DelayConfig) -> float:
    return config.duration * UNIT_MS[config.unit]


def entry_delay(config: DelayConfig) -> dt.timedelta:
    return dt.timedelta(milliseconds=delay_ms(config))


def execute(ctx: StepContext, config: DelayConfig) -> StepOutcome:
    return StepOutcome.completed()
