"""Read-only logs: the audit log and stored events."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.http import HttpRequest

from owlat.admin_tenancy import (
    TenantModelAdmin,
)
from owlat.models import (
    AuditLog,
    Event,
)

# --- logs: audit, events, webhooks ---------------------------------------------------------------------------


@admin.register(AuditLog)
class AuditLogAdmin(TenantModelAdmin):
    read_only = True
    list_display = ("created_at", "action", "resource", "resource_id", "user_id")
    list_filter = ("action", "resource")
    search_fields = ("resource_id", "user_id", "action")
    date_hierarchy = "created_at"
    ordering = ("-created_at",)

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None):
        return [f.name for f in AuditLog._meta.fields]


@admin.register(Event)
class EventAdmin(TenantModelAdmin):
    read_only = True
    list_display = ("id", "event_name", "contact", "triggered_automations", "created_at")
    list_filter = ("event_name",)
    search_fields = ("id", "event_name", "contact__email")
    list_select_related = ("contact",)
    ordering = ("-created_at",)

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None):
        return [f.name for f in Event._meta.fields]
