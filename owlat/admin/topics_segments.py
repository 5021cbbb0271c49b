"""Topics (member counts, in-use guard) and segments (live counts, in-use guard)."""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.contrib.admin.views.main import ChangeList
from django.core.exceptions import ValidationError
from django.db.models import Count, OuterRef, Subquery
from django.db.models.functions import Coalesce
from django.http import HttpRequest
from django.urls import path

from owlat.admin.service_writes import adopt_written_row
from owlat.admin_tenancy import (
    TenantModelAdmin,
)
from owlat.forms.nested import json_block
from owlat.forms.segments import SegmentForm, segment_count_view
from owlat.models import (
    ContactTopic,
    Segment,
    Topic,
)

# --- topics and segments -----------------------------------------------------------------------------------


@admin.register(Topic)
class TopicAdmin(TenantModelAdmin):
    manage_permission = "topics:manage"
    list_display = (
        "name",
        "member_count",
        "pending_count",
        "require_double_opt_in",
        "is_default",
        "display_order",
        "created_at",
    )
    list_filter = ("require_double_opt_in", "is_default")
    search_fields = ("name", "description")
    fields = (
        "organization",
        "name",
        "description",
        "display_order",
        "is_default",
        "require_double_opt_in",
        "cached_member_count",
    )
    readonly_fields = ("cached_member_count",)

    def get_queryset(self, request: HttpRequest):
        # Members come from the counter owlat.topics keeps (`cached_member_count`: memberships of live contacts,
        # pending ones included); pending ones are counted per listed topic by a correlated subquery on the
        # partial index of pending memberships — never an aggregate over every membership of the organization.
        pending = (
            ContactTopic.objects.filter(
                topic=OuterRef("pk"), pending_doi_confirmation=True, contact__deleted_at__isnull=True
            )
            .order_by()
            .values("topic")
            .annotate(n=Count("pk"))
            .values("n")
        )
        return super().get_queryset(request).annotate(_pending=Coalesce(Subquery(pending), 0))

    @admin.display(description="members", ordering="cached_member_count")
    def member_count(self, obj: Topic) -> int:
        return max(0, obj.cached_member_count - obj._pending)

    @admin.display(description="pending DOI", ordering="_pending")
    def pending_count(self, obj: Topic) -> int:
        return obj._pending

    def save_model(self, request: HttpRequest, obj: Topic, form: Any, change: bool) -> None:
        from owlat.topics import TOPIC_FIELDS, topic_create, topic_update

        values = {f: form.cleaned_data[f] for f in TOPIC_FIELDS if f in form.cleaned_data}
        if change:
            topic_update(topic=Topic.objects.get(pk=obj.pk), changes=values)
            obj.refresh_from_db()
            return
        topic = topic_create(organization_id=obj.organization_id, actor=self.actor(request), **values)
        adopt_written_row(obj, topic)

    def _in_use(self, obj: Topic) -> list[dict[str, str]]:
        from owlat.inuse import topic_in_use

        return topic_in_use(obj.organization_id, obj.pk)

    def delete_model(self, request: HttpRequest, obj: Topic) -> None:
        used = self._in_use(obj)
        if used:
            raise ValidationError(f"Topic is in use by {', '.join(u['kind'] + ' ' + u['id'] for u in used)}.")
        super().delete_model(request, obj)

    def delete_queryset(self, request: HttpRequest, queryset: Any) -> None:
        for topic in queryset:
            if self._in_use(topic):
                self.message_user(request, f"Topic “{topic}” is in use and was kept.", messages.ERROR)
                continue
            topic.delete()

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        if obj is not None and self._in_use(obj):
            return False
        return super().has_delete_permission(request, obj)


class SegmentChangeList(ChangeList):
    """Computes the live count of every segment on the page in one query per organization."""

    def get_results(self, request: HttpRequest) -> None:
        super().get_results(request)
        segment_live_counts(list(self.result_list))


def segment_live_counts(segments: list[Segment]) -> None:
    """Set `_live_count` on each segment: one aggregate query per organization, corrupt filters count 0."""
    from owlat.conditions import ConditionError, filters_q
    from owlat.contacts import live_contacts

    by_org: dict[Any, list[Segment]] = {}
    for segment in segments:
        by_org.setdefault(segment.organization_id, []).append(segment)
    for org_id, group in by_org.items():
        aggregates = {}
        for i, segment in enumerate(group):
            try:
                aggregates[f"s{i}"] = Count("pk", filter=filters_q(segment.filters, org_id))
            except ConditionError:
                segment._live_count = 0
        if aggregates:
            counts = live_contacts(org_id).aggregate(**aggregates)
            for i, segment in enumerate(group):
                if f"s{i}" in counts:
                    segment._live_count = counts[f"s{i}"]


@admin.register(Segment)
class SegmentAdmin(TenantModelAdmin):
    form = SegmentForm
    manage_permission = "segments:manage"
    list_display = ("name", "live_count", "cached_count", "cached_count_at", "updated_at")
    search_fields = ("name", "description")
    readonly_fields = ("live_count", "cached_count", "cached_count_at", "filters_json")

    def get_changelist(self, request: HttpRequest, **kwargs: Any):
        return SegmentChangeList

    def get_fields(self, request: HttpRequest, obj: Any = None):
        fields = ["organization", "name", "description", "filters_builder"]
        return fields if obj is None else [*fields, *self.readonly_fields]

    def get_urls(self):
        count = path("count/", self.admin_site.admin_view(segment_count_view), name="owlat_segment_count")
        return [count, *super().get_urls()]

    @admin.display(description="stored JSON")
    def filters_json(self, obj: Segment) -> str:
        return json_block(obj.filters)

    @admin.display(description="live count")
    def live_count(self, obj: Segment) -> int | str:
        if obj is None or obj.pk is None:
            return "-"
        if not hasattr(obj, "_live_count"):
            segment_live_counts([obj])
        return obj._live_count

    def save_model(self, request: HttpRequest, obj: Segment, form: Any, change: bool) -> None:
        from owlat.segments import SEGMENT_FIELDS, segment_create, segment_update

        values = {f: form.cleaned_data[f] for f in SEGMENT_FIELDS if f in form.cleaned_data}
        if change:
            segment_update(segment=Segment.objects.get(pk=obj.pk), changes=values)
            obj.refresh_from_db()
            return
        segment = segment_create(organization_id=obj.organization_id, actor=self.actor(request), **values)
        adopt_written_row(obj, segment)

    def _in_use(self, obj: Segment) -> list[dict[str, str]]:
        from owlat.inuse import segment_in_use

        return segment_in_use(obj.organization_id, obj.pk)

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        if obj is not None and self._in_use(obj):
            return False
        return super().has_delete_permission(request, obj)

    def delete_queryset(self, request: HttpRequest, queryset: Any) -> None:
        for segment in queryset:
            if self._in_use(segment):
                self.message_user(request, f"Segment “{segment}” is in use and was kept.", messages.ERROR)
                continue
            segment.delete()
