"""The one lifecycle mechanism every state machine uses (spec D-04): `types` (effects, `Decision`, `Move`,
`Outcome`, `legal_edges`), `runner` (`Lifecycle`: the single-row runner) and `batch` (its set-based runner).
Import everything from `owlat.lifecycle`."""

from owlat.lifecycle.runner import Lifecycle
from owlat.lifecycle.types import (
    Analytics,
    Applied,
    Audit,
    Call,
    Decision,
    Effect,
    Enqueue,
    Move,
    Outcome,
    legal_edges,
)

__all__ = [
    "Analytics",
    "Applied",
    "Audit",
    "Call",
    "Decision",
    "Effect",
    "Enqueue",
    "Lifecycle",
    "Move",
    "Outcome",
    "legal_edges",
]
