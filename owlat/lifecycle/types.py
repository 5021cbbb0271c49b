"""The lifecycle value types (D-04): effects, a reducer's `Decision`, a batch `Move`, the `Outcome`, and the graph
read from a django-fsm declaration."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Literal

from django.db import models

from owlat.ids import PrimaryKey

Applied = Literal["transitioned", "recorded", "duplicate"]


# --- Effects: plain data, applied by the runner ---------------------------------------------------------


@dataclass(frozen=True)
class Audit:
    action: str
    details: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Analytics:
    event: str
    properties: dict[str, Any] = field(default_factory=dict)
    distinct_id: str | None = None  # defaults to the actor


@dataclass(frozen=True)
class Enqueue:
    func: str
    args: tuple = ()
    at: dt.datetime | None = None
    queue: str | None = None


@dataclass(frozen=True)
class Call:
    """A named effect handled by the lifecycle's `effect_handlers` in the same transaction."""

    name: str
    kwargs: dict[str, Any] = field(default_factory=dict)


Effect = Audit | Analytics | Enqueue | Call


@dataclass(frozen=True)
class Decision:
    """What a pure reducer returns."""

    ok: bool
    reason: str | None = None
    applied: Applied | None = None
    patch: dict[str, Any] = field(default_factory=dict)
    effects: tuple[Effect, ...] = ()
    #: Column values (read from the row) that the set-based runner's compare-and-set requires besides the
    #: state; the locking runner ignores it (the row is locked while the reducer reads it).
    guard: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def refuse(cls, reason: str) -> Decision:
        return cls(ok=False, reason=reason)

    @classmethod
    def accept(
        cls,
        patch: dict[str, Any],
        effects: Iterable[Effect] = (),
        applied: Applied = "transitioned",
        guard: dict[str, Any] | None = None,
    ) -> Decision:
        return cls(
            ok=True, applied=applied, patch=dict(patch), effects=tuple(effects), guard=dict(guard or {})
        )


@dataclass(frozen=True)
class Move:
    """One row's transition in a set-based batch (`Lifecycle.transition_many`): the row as loaded (the reducer
    reads it; the compare-and-set checks that its state is still the one read), the target, the input."""

    obj: Any
    to: str
    input: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Outcome:
    ok: bool
    applied: Applied | None = None
    reason: str | None = None
    message: str | None = None
    from_state: str | None = None
    to_state: str | None = None
    object_id: PrimaryKey | None = None
    obj: Any = field(default=None, repr=False, compare=False)

    def as_transition(self) -> dict[str, Any]:
        """The API's `transition` object (API-24)."""
        return {"applied": self.applied, "from": self.from_state, "to": self.to_state}


def legal_edges(model: type[models.Model], field_name: str = "status") -> frozenset[tuple[str, str]]:
    """The graph declared with django-fsm on `model.field_name`, as a set of (source, target) pairs."""
    fsm_field: Any = model._meta.get_field(field_name)  # an FSMField
    edges: set[tuple[str, str]] = set()
    for t in fsm_field.get_all_transitions(model):
        if t.target is not None:
            edges.add((t.source, t.target))
    return frozenset(edges)
