"""In-use checks for deleting topics and segments (API-25).

The kernel cannot import campaigns or automations (layering), so those apps register a checker in their
`AppConfig.ready()`:

    from owlat.api.inuse import register_topic_in_use, register_segment_in_use
    register_topic_in_use(lambda organization_id, topic_id: [{"kind": "campaign", "id": "…"}, ...])

A checker returns the referencing objects as `[{"kind", "id"}]` (empty when none); the API refuses the delete
with 422 `topic_in_use` / `segment_in_use` and `data.usedBy`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

UsedBy = list[dict[str, str]]
Checker = Callable[[Any, Any], UsedBy]

_topic_checkers: list[Checker] = []
_segment_checkers: list[Checker] = []


def _register(registry: list[Checker], fn: Checker) -> Checker:
    if fn not in registry:
        registry.append(fn)
    return fn


def register_topic_in_use(fn: Checker) -> Checker:
    """`fn(organization_id, topic_id) -> [{"kind", "id"}]`."""
    return _register(_topic_checkers, fn)


def register_segment_in_use(fn: Checker) -> Checker:
    """`fn(organization_id, segment_id) -> [{"kind", "id"}]`."""
    return _register(_segment_checkers, fn)


def _collect(registry: list[Checker], organization_id: Any, obj_id: Any) -> UsedBy:
    used: UsedBy = []
    for checker in registry:
        for item in checker(organization_id, obj_id) or []:
            used.append({"kind": str(item["kind"]), "id": str(item["id"])})
    return used


def topic_in_use(organization_id: Any, topic_id: Any) -> UsedBy:
    return _collect(_topic_checkers, organization_id, topic_id)


def segment_in_use(organization_id: Any, segment_id: Any) -> UsedBy:
    return _collect(_segment_checkers, organization_id, segment_id)
