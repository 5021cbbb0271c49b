"""The five step kinds of the walker (AGT-12): each module has `RUNS_IN` (the status it runs in), `execute(ctx,
input) -> output` (may call the model; runs outside any transaction) and the pure `route(output, input, ctx) ->
Route` (AGT-11); `ROUTES_IN_STATE = True` on a step whose route is always `in_state`. `clarify` (AGT-18) sits between classify and draft when switched on."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any, Literal

from inbox.llm import CallLog
from inbox.models import AgentConfig, InboundMessage


@dataclass
class StepContext:
    message: InboundMessage
    config: AgentConfig
    now: dt.datetime
    calls: CallLog = field(default_factory=CallLog)
    #: companion fields the step writes on the message in state (AGT-16, AGT-19); the walker writes them in the
    #: step's closing transaction, where that conditional UPDATE also takes the row lock and checks the status
    record: dict[str, Any] | None = None
    #: writes that belong with the step's result (a breaker observation): run in the closing transaction once the
    #: message is locked in the step's status, so they commit with it and cost no transaction of their own
    on_close: list[Callable[[], Any]] = field(default_factory=list)
    #: the organization's stored feature flags when the walker read them with the message (the start task)
    stored_flags: dict[str, Any] | None = None


@dataclass(frozen=True)
class Route:
    form: Literal["in_state", "transition", "done"]
    next_step: str | None = None
    next_input: dict[str, Any] | None = None
    to: str | None = None
    transition_input: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def in_state(cls, next_step: str, next_input: dict[str, Any] | None = None) -> Route:
        return cls("in_state", next_step=next_step, next_input=next_input or {})

    @classmethod
    def transition(
        cls,
        to: str,
        transition_input: dict[str, Any] | None = None,
        next_step: str | None = None,
        next_input: dict[str, Any] | None = None,
    ) -> Route:
        return cls(
            "transition",
            next_step=next_step,
            next_input=next_input or {},
            to=to,
            transition_input=transition_input or {},
        )

    @classmethod
    def done(cls) -> Route:
        return cls("done")


def step_module(kind: str) -> ModuleType:
    from inbox.steps import clarify, classify, context, draft, route, scan

    modules = {
        "security_scan": scan,
        "context_retrieval": context,
        "classify": classify,
        "clarify": clarify,
        "draft": draft,
        "route": route,
    }
    try:
        return modules[kind]
    except KeyError:
        raise ValueError(f"unknown step kind {kind!r}") from None
