"""Received bounces in the admin: the list (filters by kind, reason, provider, domain), the contact page's
"Bounces received" section, and the dashboard's deliverability alert (blocks per receiving domain)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from django.contrib import admin
from django.http import HttpRequest
from django.urls import reverse

from delivery.bounces.reasons import REASON_CHOICES, REASON_LABELS
from delivery.models import BounceRecord
from owlat.admin.contact_timeline import ContactSection, register_contact_section
from owlat.admin_tenancy import TenantModelAdmin


class ReasonFilter(admin.SimpleListFilter):
    title = "reason"
    parameter_name = "reason"

    def lookups(self, request: HttpRequest, model_admin: Any):
        return REASON_CHOICES

    def queryset(self, request: HttpRequest, queryset: Any):
        return queryset.filter(reason=self.value()) if self.value() else queryset


@admin.register(BounceRecord)
class BounceRecordAdmin(TenantModelAdmin):
    """Every bounce, complaint, delay warning and auto-reply the intake received; read-only evidence."""

    read_only = True
    list_display = ("received_at", "email", "kind", "reason_label", "status", "provider", "diagnostic_short")
    list_filter = ("kind", ReasonFilter, "provider", "suppressed", "received_at")
    search_fields = ("email", "recipient_domain", "diagnostic")
    date_hierarchy = "received_at"
    ordering = ("-received_at",)

    @admin.display(description="reason", ordering="reason")
    def reason_label(self, obj: BounceRecord) -> str:
        return REASON_LABELS.get(obj.reason, obj.reason)

    @admin.display(description="diagnostic")
    def diagnostic_short(self, obj: BounceRecord) -> str:
        text = obj.diagnostic or ""
        return text if len(text) <= 140 else text[:137] + "…"


def contact_bounces(request: HttpRequest, contact: Any) -> ContactSection | None:
    """The contact page's "Bounces received": the latest 20 reports with reason, code and diagnostic."""
    rows = BounceRecord.objects.filter(organization_id=contact.organization_id, email=contact.email.lower())[
        :20
    ]
    return ContactSection(
        title="Bounces received",
        columns=["Received", "Kind", "Reason", "Status", "What the server said", "Suppressed"],
        rows=[
            [
                r.received_at,
                r.kind,
                REASON_LABELS.get(r.reason, r.reason),
                r.status,
                r.diagnostic,
                r.suppressed,
            ]
            for r in rows
        ],
        empty="No bounce received for this address.",
        anchor="bounces",
    )


register_contact_section(contact_bounces)


def deliverability_attention(organization_id: Any) -> Iterator[Any]:
    """Dashboard "Needs attention": receiving domains blocking this organization's mail (see records)."""
    from delivery.bounces.records import deliverability_alerts
    from owlat.admin.dashboard import AttentionItem

    for alert in deliverability_alerts(organization_id=organization_id):
        link = (
            reverse("admin:delivery_bouncerecord_changelist")
            + f"?kind__exact=block&q={alert.recipient_domain}"
        )
        detail = f"Latest: {alert.last_diagnostic}" if alert.last_diagnostic else ""
        yield AttentionItem(alert.message, link=link, severity="danger", detail=detail[:500])
