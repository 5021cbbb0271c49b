"""The run browser: a read-only list of automation runs with the per-run timeline of step runs (status, times,
retries, error, the linked send row)."""

from __future__ import annotations

import json

from django.contrib import admin
from django.http import HttpRequest
from django.urls import NoReverseMatch, reverse
from django.utils.html import format_html

from automations.models import AutomationRun, AutomationStepRun
from owlat.admin_tenancy import TenantModelAdmin, TenantTabularInline


class StepRunInline(TenantTabularInline):
    """The per-run timeline."""

    model = AutomationStepRun
    extra = 0
    can_delete = False
    read_only = True
    ordering = ("scheduled_at", "step_index")
    fields = (
        "step_index",
        "step_type",
        "status",
        "scheduled_at",
        "delay_until",
        "started_at",
        "completed_at",
        "retry_count",
        "error_message",
        "note",
        "send_row",
    )
    readonly_fields = fields
    feature_flag = "automations"

    @admin.display(description="send row")
    def send_row(self, sr: AutomationStepRun) -> str:
        if not sr.email_send_id:
            return "—"
        try:
            url = reverse("admin:delivery_transactionalsend_change", args=[sr.email_send_id])
        except NoReverseMatch:
            return sr.email_send_id
        return format_html('<a href="{}">{}</a>', url, sr.email_send_id)


@admin.register(AutomationRun)
class AutomationRunAdmin(TenantModelAdmin):
    read_only = True
    feature_flag = "automations"
    inlines = [StepRunInline]
    list_display = (
        "id",
        "automation",
        "contact",
        "status",
        "current_step_index",
        "steps_executed",
        "started_at",
        "next_step_at",
        "completed_at",
    )
    list_filter = ("status", "automation", "triggered_by")
    list_select_related = ("automation", "contact")
    search_fields = ("contact__email", "automation__name")
    date_hierarchy = "started_at"
    fields = (
        "automation",
        "contact",
        "status",
        "triggered_by",
        "trigger_data_pretty",
        "current_step_index",
        "steps_executed",
        "started_at",
        "next_step_at",
        "completed_at",
    )
    readonly_fields = fields

    @admin.display(description="trigger data")
    def trigger_data_pretty(self, run: AutomationRun) -> str:
        return json.dumps(run.trigger_data, indent=1) if run.trigger_data else "—"

    def get_queryset(self, request: HttpRequest):
        return super().get_queryset(request).select_related("automation", "contact")
