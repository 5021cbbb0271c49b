"""The segment form (DOM-09): name, description and the condition builder, with a live count of the contacts
that match what is on the screen (the `count/` view the segment admin mounts)."""

from __future__ import annotations

import uuid
from functools import cached_property
from typing import Any

from django import forms
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, JsonResponse
from django.urls import NoReverseMatch, reverse

from owlat.admin_tenancy import get_tenancy
from owlat.conditions import ConditionError, canonicalize_filters, filters_count
from owlat.forms.conditions import FiltersForm
from owlat.forms.nested import (
    NestedFormsField,
    clean_nested,
    error_messages,
    form_organization_id,
    initial_from,
)
from owlat.models import Segment

PREFIX = "filters"


def count_label(count: int) -> str:
    return f"{count} contact{'' if count == 1 else 's'} match{'es' if count == 1 else ''} now"


class SegmentForm(forms.ModelForm):
    filters_builder = NestedFormsField(label="Contacts who match")

    class Meta:
        model = Segment
        fields = ("organization", "name", "description")
        widgets = {"description": forms.Textarea(attrs={"rows": 2})}

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["filters_builder"].widget.get_forms = lambda: {PREFIX: self.builder}

    @cached_property
    def builder(self) -> FiltersForm:
        stored = self.instance.filters if self.instance.pk else {"logic": "AND", "conditions": []}
        builder = FiltersForm(
            self.data if self.is_bound else None,
            prefix=PREFIX,
            initial=initial_from(FiltersForm, stored),
            conditions_initial=FiltersForm.conditions_from_config(stored),
            organization_id=form_organization_id(self),
        )
        try:
            url = reverse("admin:owlat_segment_count")
        except NoReverseMatch:
            url = ""
        builder.count_url = f"{url}?organization={form_organization_id(self) or ''}" if url else ""
        return builder

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean()
        config = clean_nested(self, "filters_builder", self.builder)
        if config is not None:
            try:
                cleaned["filters"] = canonicalize_filters(config)
            except ConditionError as exc:  # pragma: no cover - the builder offers only valid values
                self.add_error("filters_builder", str(exc))
        return cleaned


def segment_count_view(request: HttpRequest) -> JsonResponse:
    """POST the segment form → `{"count", "label"}` for the conditions on screen, or `{"errors": [...]}`."""
    tenancy = get_tenancy(request)
    try:
        org_id = uuid.UUID(request.GET.get("organization") or str(tenancy.organization_id))
    except ValueError:
        return JsonResponse({"errors": ["Choose an organization first."]})
    if not (tenancy.is_platform_staff or str(tenancy.organization_id) == str(org_id)):
        raise PermissionDenied
    builder = FiltersForm(request.POST, prefix=PREFIX, organization_id=org_id)
    if not builder.is_valid():
        return JsonResponse({"errors": error_messages(builder)})
    count = filters_count(org_id, builder.cleaned_data["config"])
    return JsonResponse({"count": count, "label": count_label(count)})
