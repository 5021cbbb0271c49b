"""Background-work rows (platform staff) and the daily sending counters (DLV-11)."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.http import HttpRequest

from owlat.admin_tenancy import (
    PlatformOnlyAdmin,
    TenantModelAdmin,
)
from owlat.models import (
    DueTask,
    IdempotencyRecord,
    RateBucket,
    SendingStat,
    WorkerHeartbeat,
)

# --- background work (platform staff) ------------------------------------------------------------------------


@admin.register(DueTask)
class DueTaskAdmin(PlatformOnlyAdmin):
    read_only = True
    list_display = ("func", "due_at", "queue", "attempts", "lease_until", "created_at")
    list_filter = ("queue",)
    search_fields = ("func",)
    ordering = ("due_at",)


@admin.register(WorkerHeartbeat)
class WorkerHeartbeatAdmin(PlatformOnlyAdmin):
    read_only = True
    list_display = ("name", "beat_at", "pid", "host")


@admin.register(SendingStat)
class SendingStatAdmin(TenantModelAdmin):
    """DLV-11 daily sending counters per sender domain (read-only)."""

    read_only = True
    list_display = (
        "day",
        "sender_domain",
        "sent",
        "delivered",
        "opened",
        "clicked",
        "bounced",
        "hard_bounced",
        "complained",
        "failed",
    )
    list_filter = ("day", "sender_domain")
    ordering = ("-day", "sender_domain")

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None):
        return [f.name for f in SendingStat._meta.fields]


@admin.register(RateBucket)
class RateBucketAdmin(PlatformOnlyAdmin):
    """Token buckets shared by every process (API-04 per key, D-06 pool pacing)."""

    read_only = True
    list_display = ("key", "tokens", "updated_at")
    search_fields = ("key",)
    ordering = ("key",)


@admin.register(IdempotencyRecord)
class IdempotencyRecordAdmin(PlatformOnlyAdmin):
    """API-11 stored responses per (API key, Idempotency-Key)."""

    read_only = True
    tenant_lookup = "api_key__organization"
    list_display = ("key", "api_key", "completed", "response_status", "created_at")
    list_filter = ("completed",)
    list_select_related = ("api_key",)
    search_fields = ("key",)
    ordering = ("-created_at",)
    show_full_result_count = False
