"""The kernel's admin back-office (D-12): the members' product UI and the platform staff's console.

Every screen is a `TenantModelAdmin` (owlat.admin_tenancy): filtered by the active organization, DOM-02 roles
mapped to permissions. Writes go through the kernel services (contacts, topics, suppression, API keys) so their
triggers, activities and audit rows fire; status fields are read-only (DOM-20).
"""

from typing import Any

from django.contrib import admin
from django.core.exceptions import ValidationError
from unfold.forms import AuthenticationForm as UnfoldAuthenticationForm

from owlat.admin import (  # noqa: F401  (importing registers the screens)
    apikeys,
    audit,
    contacts,
    domains,
    infrastructure,
    organization_settings,
    organizations,
    senders,
    signup_forms,
    suppression,
    system,
    topics_segments,
    unfold_patches,
    webhooks,
)
from owlat.admin.organization_settings import organization_abuse_status_change
from owlat.admin.topics_segments import segment_live_counts


class LoginForm(UnfoldAuthenticationForm):
    """unfold's admin login; an account without admin access whose holder has an invitation waiting is told
    where to answer it (they get access by accepting)."""

    def confirm_login_allowed(self, user: Any) -> None:
        from owlat.invitations import invitations_for

        if user.is_active and not user.is_staff and invitations_for(user).exists():
            raise ValidationError(
                "You have an invitation waiting: sign in on /invitations/login/ to accept or decline it.",
                code="invitation_waiting",
            )
        super().confirm_login_allowed(user)


admin.site.login_form = LoginForm
admin.site.site_header = "Owlat"
admin.site.site_title = "Owlat"
admin.site.index_title = "Back-office"

__all__ = ["organization_abuse_status_change", "segment_live_counts"]
