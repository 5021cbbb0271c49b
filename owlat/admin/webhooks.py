"""Customer webhook endpoints and their deliveries (DOM-18)."""

from __future__ import annotations

import secrets
from typing import Any

from django import forms
from django.contrib import admin
from django.db.models import Count, Q
from django.http import HttpRequest

from owlat.admin_tenancy import (
    TenantModelAdmin,
    TenantTabularInline,
    register_tenant_lookup,
)
from owlat.models import (
    WebhookAttempt,
    WebhookDelivery,
    WebhookEndpoint,
)

register_tenant_lookup(WebhookAttempt, "delivery__organization")


class WebhookEndpointForm(forms.ModelForm):
    url = forms.URLField(max_length=1000, assume_scheme="https")
    events = forms.MultipleChoiceField(
        choices=lambda: [(e, e) for e in _webhook_event_types()],
        widget=forms.CheckboxSelectMultiple,
        required=False,
        help_text="Event types to receive; none ticked = all.",
    )

    class Meta:
        model = WebhookEndpoint
        fields = ("organization", "url", "description", "events", "is_active")


def _webhook_event_types() -> tuple[str, ...]:
    from owlat.webhooks import WEBHOOK_EVENT_TYPES

    return WEBHOOK_EVENT_TYPES


@admin.register(WebhookEndpoint)
class WebhookEndpointAdmin(TenantModelAdmin):
    form = WebhookEndpointForm
    manage_permission = "settings:manage"
    feature_flag = "webhooks"
    list_display = ("url", "is_active", "event_list", "delivery_count", "failed_count", "created_at")
    list_filter = ("is_active",)
    search_fields = ("url", "description")

    def may_read_secret(self, request: HttpRequest, obj: Any) -> bool:
        """The signing secret is shown only to those who may manage webhooks (owner/admin, platform staff)."""
        return self.has_change_permission(request, obj)

    def get_fields(self, request: HttpRequest, obj: Any = None):
        fields = ["organization", "url", "description", "events", "is_active"]
        if obj is None:
            return fields
        return [*fields, *(["secret"] if self.may_read_secret(request, obj) else []), "created_at"]

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None):
        return ["secret", "created_at"] if obj is not None else []

    def get_queryset(self, request: HttpRequest):
        return (
            super()
            .get_queryset(request)
            .annotate(
                _deliveries=Count("deliveries"),
                _failed=Count("deliveries", filter=Q(deliveries__status="failed")),
            )
        )

    @admin.display(description="events")
    def event_list(self, obj: WebhookEndpoint) -> str:
        return ", ".join(obj.events or []) or "all"

    @admin.display(description="deliveries", ordering="_deliveries")
    def delivery_count(self, obj: WebhookEndpoint) -> int:
        return obj._deliveries

    @admin.display(description="failed", ordering="_failed")
    def failed_count(self, obj: WebhookEndpoint) -> int:
        return obj._failed

    def save_model(self, request: HttpRequest, obj: WebhookEndpoint, form: Any, change: bool) -> None:
        if not change and not obj.secret:
            obj.secret = "whsec_" + secrets.token_urlsafe(32)
        super().save_model(request, obj, form, change)


class WebhookAttemptInline(TenantTabularInline):
    model = WebhookAttempt
    read_only = True
    fields = ("attempt", "status_code", "error", "duration_ms", "attempted_at")
    readonly_fields = fields
    extra = 0
    can_delete = False


@admin.register(WebhookDelivery)
class WebhookDeliveryAdmin(TenantModelAdmin):
    read_only = True
    feature_flag = "webhooks"
    list_display = ("event_type", "endpoint", "status", "attempts", "last_status_code", "created_at")
    list_filter = ("status", "event_type", "endpoint")
    search_fields = ("event_id", "event_type")
    list_select_related = ("endpoint",)
    ordering = ("-created_at",)
    inlines = (WebhookAttemptInline,)

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None):
        return [f.name for f in WebhookDelivery._meta.fields]
