"""In-use checks before a delete (API-25, DOM-13): is a topic, segment, template or sign-up form still referenced?

The lower layers cannot import the engines that reference them (layering), so each engine registers a checker in
its `AppConfig.ready()`:

    from owlat.inuse import register_topic_in_use
    register_topic_in_use(lambda organization_id, topic_id: [{"kind": "automation", "id": "…"}, ...])

A checker returns the referencing objects as `[{"kind", "id"}]` (empty when none); API and admin refuse the
delete with 422 `<thing>_in_use` and `data.usedBy`. Templates (a layer above the kernel) use the same
mechanism; `templates.services` re-exports their two names.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

UsedBy = list[dict[str, str]]
Checker = Callable[[Any, Any], UsedBy]


class InUseRegistry:
    """Checkers for one kind of object; `collect` asks each and normalizes the answers."""

    def __init__(self) -> None:
        self._checkers: list[Checker] = []

    def register(self, fn: Checker) -> Checker:
        """`fn(organization_id, object_id) -> [{"kind", "id"}]`; registering twice is a no-op."""
        if fn not in self._checkers:
            self._checkers.append(fn)
        return fn

    def unregister(self, fn: Checker) -> None:
        if fn in self._checkers:
            self._checkers.remove(fn)

    def collect(self, organization_id: Any, object_id: Any) -> UsedBy:
        used: UsedBy = []
        for checker in self._checkers:
            for item in checker(organization_id, object_id) or []:
                used.append({"kind": str(item["kind"]), "id": str(item["id"])})
        return used


topics = InUseRegistry()
segments = InUseRegistry()
templates = InUseRegistry()
forms = InUseRegistry()

register_topic_in_use = topics.register
register_segment_in_use = segments.register
topic_in_use = topics.collect
segment_in_use = segments.collect
register_template_in_use = templates.register
template_in_use = templates.collect
register_form_in_use = forms.register
form_in_use = forms.collect
