"""Admin tenancy (D-12): the active-organization switch and the base classes every tenant admin uses.

The Django admin is the product UI for organization members as well as the console of platform staff.

* `ActiveOrganizationMiddleware` resolves, per request, which organization the admin shows:
  `request.tenancy` (a `Tenancy`) and `request.active_organization` (an `Organization` or `None`).
  A member picks one of their own organizations; platform staff (superusers) may pick any organization or
  "all". The choice lives in the session (`SESSION_KEY`).
* `switch_organization_view` (mounted by `owlat.admin.organizations` at `admin:owlat_switch_organization`) changes it;
  the header selector (template `admin/base_site.html`) posts to it.
* `TenantModelAdmin` / `TenantAdminMixin` and `TenantTabularInline` / `TenantStackedInline` filter everything a
  member sees, picks or counts by the active organization (querysets, foreign-key and many-to-many choices,
  list filters, actions, search, counts, change views by URL), fill in `organization` on create, reject
  references across organizations, and map DOM-02 roles to the admin's view/add/change/delete permissions.

Other apps' admins subclass `TenantModelAdmin` and set `manage_permission` (e.g. "campaigns:manage").
Organization members are staff users without Django model permissions: these classes decide.
"""

from owlat.admin_tenancy.access import (
    ALL_ORGANIZATIONS,
    NO_TENANCY,
    SESSION_KEY,
    SWITCH_URL_NAME,
    ActiveOrganizationMiddleware,
    Tenancy,
    active_organization_context,
    get_tenancy,
    is_platform_staff,
    resolve_tenancy,
    switch_organization_view,
    tenancy_flag_enabled,
    tenancy_switch,
)
from owlat.admin_tenancy.filtering import (
    cross_organization_errors,
    has_direct_organization,
    register_tenant_lookup,
    restrict_form_to_organization,
    tenant_filter,
    tenant_lookup_for,
)
from owlat.admin_tenancy.options import (
    PlatformOnlyAdmin,
    TenantAdminMixin,
    TenantInlineMixin,
    TenantModelAdmin,
    TenantStackedInline,
    TenantTabularInline,
)

__all__ = [
    "ALL_ORGANIZATIONS",
    "NO_TENANCY",
    "SESSION_KEY",
    "SWITCH_URL_NAME",
    "ActiveOrganizationMiddleware",
    "PlatformOnlyAdmin",
    "Tenancy",
    "TenantAdminMixin",
    "TenantInlineMixin",
    "TenantModelAdmin",
    "TenantStackedInline",
    "TenantTabularInline",
    "active_organization_context",
    "cross_organization_errors",
    "get_tenancy",
    "has_direct_organization",
    "is_platform_staff",
    "register_tenant_lookup",
    "resolve_tenancy",
    "restrict_form_to_organization",
    "switch_organization_view",
    "tenancy_flag_enabled",
    "tenancy_switch",
    "tenant_filter",
    "tenant_lookup_for",
]
