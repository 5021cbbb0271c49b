"""The kernel's admin back-office (D-12): the members' product UI and the platform staff's console."""

from __future__ import annotations

from django.contrib import admin
from django.urls import path

from owlat.admin_tenancy import TenantModelAdmin, switch_organization_view
from owlat.models import Organization


@admin.register(Organization)
class OrganizationAdmin(TenantModelAdmin):
    tenant_lookup = "pk"
    manage_permission = "organization:manage"
    delete_permission = "organization:delete"
    list_display = ("name", "created_at")
    search_fields = ("name",)

    def get_urls(self):
        return [
            path(
                "switch/",
                self.admin_site.admin_view(switch_organization_view),
                name="owlat_switch_organization",
            ),
            *super().get_urls(),
        ]
