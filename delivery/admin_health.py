"""Provider health in the admin (DLV-17): per provider over the last hour and day (success rate, attempts,
average and worst latency), then the per-minute rows. Install-wide, so platform staff only; read-only."""

from __future__ import annotations

import datetime as dt

from django.contrib import admin
from django.http import HttpRequest

from delivery.health import provider_health_summary
from delivery.models import ProviderHealth
from owlat.admin_tenancy import PlatformOnlyAdmin

WINDOWS = (("Last hour", dt.timedelta(hours=1)), ("Last 24 hours", dt.timedelta(hours=24)))


@admin.register(ProviderHealth)
class ProviderHealthAdmin(PlatformOnlyAdmin):
    change_list_template = "admin/delivery/providerhealth/change_list.html"
    list_display = (
        "minute",
        "provider",
        "dispatches",
        "succeeded",
        "failed",
        "unknown",
        "success",
        "attempts",
        "latency_avg",
        "latency_max_ms",
        "last_error_code",
    )
    list_filter = ("provider",)
    ordering = ("-minute", "provider")
    date_hierarchy = "minute"
    read_only = True

    @admin.display(description="success rate")
    def success(self, obj: ProviderHealth) -> str:
        rate = obj.success_rate
        return "–" if rate is None else f"{rate:.1%}"

    @admin.display(description="average latency (ms)")
    def latency_avg(self, obj: ProviderHealth) -> str:
        avg = obj.latency_avg_ms
        return "–" if avg is None else str(avg)

    def changelist_view(self, request: HttpRequest, extra_context: dict | None = None):
        extra_context = dict(extra_context or {})
        extra_context["health_windows"] = [
            (label, provider_health_summary(window=window)) for label, window in WINDOWS
        ]
        return super().changelist_view(request, extra_context)
