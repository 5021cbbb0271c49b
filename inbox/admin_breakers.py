"""Admin screen of the agent circuit breakers (AGT-20): which are open, why, until when, and a "Close breaker"
button (operator reset through `inbox.breakers.breaker_close`). Rows are written only by `inbox.breakers`."""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponseNotAllowed, HttpResponseRedirect
from django.shortcuts import get_object_or_404
from django.urls import path, reverse
from django.utils import timezone
from django.utils.html import format_html

from inbox.breakers import breaker_close
from inbox.models import CircuitBreaker
from owlat.admin_tenancy import TenantModelAdmin


@admin.register(CircuitBreaker)
class CircuitBreakerAdmin(TenantModelAdmin):
    manage_permission = "organization:manage"
    list_display = ("kind", "organization", "state", "opened_at", "closes_at", "reason", "trip_count")
    list_filter = ("kind",)
    ordering = ("organization", "kind")
    fields = (
        "close_button",
        "kind",
        "state",
        "reason",
        "opened_at",
        "closes_at",
        "trip_count",
        "samples_view",
    )
    readonly_fields = fields

    def has_add_permission(self, request: HttpRequest, *args: Any) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    @admin.display(description="state")
    def state(self, obj: CircuitBreaker) -> str:
        if obj.is_open():
            return "open — auto-send paused"
        if obj.opened_at is not None:
            return "closed (cooldown over; trips again at the next bad observation)"
        return "closed"

    @admin.display(description="recent observations")
    def samples_view(self, obj: CircuitBreaker) -> str:
        return ", ".join(str(s) for s in (obj.samples or [])[-20:]) or "—"

    @admin.display(description="reset")
    def close_button(self, obj: CircuitBreaker) -> str:
        if obj.opened_at is None:
            return "—"
        url = reverse("admin:inbox_circuitbreaker_close", args=[obj.pk])
        return format_html(
            '<button type="submit" formaction="{}" formmethod="post" class="button">Close breaker</button> '
            "<span>Closes it now and forgets its observations; do this once the cause is fixed.</span>",
            url,
        )

    def get_urls(self):
        return [
            path(
                "<path:object_id>/close/",
                self.admin_site.admin_view(self.close_view),
                name="inbox_circuitbreaker_close",
            ),
            *super().get_urls(),
        ]

    def close_view(self, request: HttpRequest, object_id: Any):
        if request.method != "POST":
            return HttpResponseNotAllowed(["POST"])
        obj = get_object_or_404(self.get_queryset(request), pk=object_id)
        if not self.has_change_permission(request, obj):
            raise PermissionDenied
        breaker_close(obj.pk, organization_id=obj.organization_id, actor=self.actor(request))
        messages.success(
            request, f"Circuit breaker {obj.kind} closed at {timezone.now():%H:%M:%S}; auto-send resumes."
        )
        return HttpResponseRedirect(reverse("admin:inbox_circuitbreaker_change", args=[obj.pk]))
