"""Segments (DOM-09): saved filters in the AUT-34 condition language, with a cached member count."""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.utils import timezone

from owlat.models import Segment

SEGMENT_FIELDS = ("name", "description", "filters")


def _segment_count(organization_id: Any, filters: dict[str, Any]) -> int:
    from owlat.conditions import filters_count

    return min(filters_count(organization_id, filters), 2**31 - 1)


def segment_create(*, organization_id: Any, actor: str, **fields: Any) -> Segment:
    values = {k: v for k, v in fields.items() if k in SEGMENT_FIELDS}
    values.setdefault("filters", {"logic": "AND", "conditions": []})
    with transaction.atomic():
        return Segment.objects.create(
            organization_id=organization_id,
            cached_count=_segment_count(organization_id, values["filters"]),
            cached_count_at=timezone.now(),
            **values,
        )


def segment_update(*, segment: Segment, changes: dict[str, Any]) -> Segment:
    changed = []
    for key, value in changes.items():
        if key in SEGMENT_FIELDS and getattr(segment, key) != value:
            setattr(segment, key, value)
            changed.append(key)
    if "filters" in changed:
        segment.cached_count = _segment_count(segment.organization_id, segment.filters)
        segment.cached_count_at = timezone.now()
        changed += ["cached_count", "cached_count_at"]
    if changed:
        segment.save(update_fields=[*changed, "updated_at"])
    return segment


def segment_delete(*, segment: Segment) -> None:
    segment.delete()
