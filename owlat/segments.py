"""Segments (DOM-09): saved filters in the AUT-34 condition language (`owlat.conditions`), with a cached member
count refreshed on every filter change and every 30 minutes (DOM-19)."""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.db.models import QuerySet
from django.utils import timezone

from owlat.conditions import filters_count, filters_queryset_safe
from owlat.models import Contact, Segment

SEGMENT_FIELDS = ("name", "description", "filters")


def _segment_count(organization_id: Any, filters: dict[str, Any]) -> int:
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


def segment_queryset(segment: Segment, *, warn: bool = False, context: str = "") -> QuerySet[Contact]:
    """The live contacts a segment selects now (corrupt filters → none; `warn` on the send path)."""
    return filters_queryset_safe(
        segment.organization_id, segment.filters, warn=warn, context=context or f"segment {segment.pk}"
    )


def segment_count_refresh(*, segment_id: Any) -> int | None:
    """Recount one segment into `cached_count` (DOM-09); returns the count, None if the segment is gone."""
    segment = Segment.objects.filter(pk=segment_id).first()
    if segment is None:
        return None
    count = segment_queryset(segment).count()
    # update() leaves `updated_at` alone: a recount is not an edit
    Segment.objects.filter(pk=segment.pk).update(cached_count=count, cached_count_at=timezone.now())
    return count


def segment_counts_refresh_task() -> str:
    """Every 30 minutes (DOM-19): refresh the cached count of every segment."""
    ids = list(Segment.objects.order_by("pk").values_list("pk", flat=True))
    refreshed = sum(1 for pk in ids if segment_count_refresh(segment_id=pk) is not None)
    return f"refreshed {refreshed} segment counts"
