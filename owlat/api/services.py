"""Topic and segment writes for the API (API-25).

The kernel has membership services (`owlat.topics`) but no topic/segment CRUD services; these are the
one place the API writes Topic and Segment rows. Reads and in-use checks live in the views / `inuse`.
"""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.utils import timezone

from owlat.models import Segment, Topic

TOPIC_FIELDS = ("name", "description", "display_order", "is_default", "require_double_opt_in")
SEGMENT_FIELDS = ("name", "description", "filters")


def topic_create(*, organization_id: Any, actor: str, **fields: Any) -> Topic:
    """Create a topic (`require_double_opt_in` defaults to true, DOM-08); analytics `topic_created`."""
    from owlat.analytics import capture

    values = {k: v for k, v in fields.items() if k in TOPIC_FIELDS}
    with transaction.atomic():
        topic = Topic.objects.create(organization_id=organization_id, **values)
        capture(distinct_id=actor, event="topic_created", properties={"topicId": str(topic.pk)})
    return topic


def topic_update(*, topic: Topic, changes: dict[str, Any]) -> Topic:
    changed = []
    for key, value in changes.items():
        if key in TOPIC_FIELDS and getattr(topic, key) != value:
            setattr(topic, key, value)
            changed.append(key)
    if changed:
        topic.save(update_fields=[*changed, "updated_at"])
    return topic


def topic_delete(*, topic: Topic) -> None:
    topic.delete()


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
