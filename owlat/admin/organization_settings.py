"""Organization settings (feature flags, abuse status) in the admin."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin
from django.core.exceptions import ValidationError
from django.db import transaction
from django.http import HttpRequest
from django.utils import timezone

from owlat.admin.organizations import is_timezone
from owlat.admin_tenancy import (
    TenantModelAdmin,
    is_platform_staff,
)
from owlat.models import (
    OrganizationSettings,
)

ABUSE_FIELDS = ("abuse_status", "abuse_status_reason")


def organization_abuse_status_change(
    *, settings_row: OrganizationSettings, status: str, reason: str, actor: str
) -> bool:
    """DOM-14: platform staff set the abuse status; audit `abuse_status_changed`. Returns whether it changed."""
    from owlat.audit import audit_write

    with transaction.atomic():
        row = OrganizationSettings.objects.select_for_update().get(pk=settings_row.pk)
        if row.abuse_status == status and row.abuse_status_reason == reason:
            return False
        previous = row.abuse_status
        row.abuse_status = status
        row.abuse_status_reason = reason
        row.abuse_status_changed_at = timezone.now()
        row.abuse_status_changed_by = actor
        row.save(
            update_fields=[
                "abuse_status",
                "abuse_status_reason",
                "abuse_status_changed_at",
                "abuse_status_changed_by",
                "updated_at",
            ]
        )
        audit_write(
            organization_id=row.organization_id,
            actor=actor,
            action="abuse_status_changed",
            resource="organization",
            resource_id=str(row.organization_id),
            details={"from": previous, "to": status, "reason": reason},
        )
    return True


class OrganizationSettingsForm(forms.ModelForm):
    class Meta:
        model = OrganizationSettings
        fields = (
            "organization",
            "timezone",
            "default_from_email",
            "default_from_name",
            "is_custom_campaign_senders_allowed",
            "abuse_status",
            "abuse_status_reason",
        )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        from owlat.flags import FLAGS

        super().__init__(*args, **kwargs)
        stored = self.instance.feature_flags or {}
        for name, flag in FLAGS.items():
            label = f"Feature: {name}"
            if flag.requires:
                label += f" (requires {', '.join(flag.requires)})"
            self.fields[f"flag:{name}"] = forms.BooleanField(
                label=label, required=False, initial=bool(stored.get(name, flag.default))
            )

    def clean(self) -> dict[str, Any]:
        from owlat.flags import FLAGS, flag_change_refusals

        data = super().clean()
        wanted = {name: bool(data.get(f"flag:{name}")) for name in FLAGS if f"flag:{name}" in self.fields}
        refusals = flag_change_refusals(self.instance.feature_flags, wanted, self.instance.organization_id)
        for name, message in refusals.items():  # AGT-30: refused, not merely warned about
            self.add_error(f"flag:{name}", message)
        return data

    def clean_timezone(self) -> str:
        value = (self.cleaned_data.get("timezone") or "").strip()
        if value and not is_timezone(value):
            raise ValidationError("Enter an IANA time zone name such as Europe/Berlin.")
        return value

    def save(self, commit: bool = True) -> OrganizationSettings:
        from owlat.flags import FLAGS

        self.instance.feature_flags = {
            name: bool(self.cleaned_data.get(f"flag:{name}"))
            for name in FLAGS
            if f"flag:{name}" in self.fields
        }
        return super().save(commit)


@admin.register(OrganizationSettings)
class OrganizationSettingsAdmin(TenantModelAdmin):
    form = OrganizationSettingsForm
    manage_permission = "settings:manage"
    list_display = ("__str__", "abuse_status", "default_from_email", "daily_send_count")
    list_filter = ("abuse_status",)
    base_readonly = (
        "abuse_status_changed_at",
        "abuse_status_changed_by",
        "daily_send_count",
        "daily_send_count_reset_at",
        "effective_flags",
    )

    def get_fields(self, request: HttpRequest, obj: Any = None):
        from owlat.flags import FLAGS

        return [
            "organization",
            "timezone",
            "default_from_email",
            "default_from_name",
            "is_custom_campaign_senders_allowed",
            *[f"flag:{name}" for name in FLAGS],
            "effective_flags",
            *ABUSE_FIELDS,
            "abuse_status_changed_at",
            "abuse_status_changed_by",
            "daily_send_count",
            "daily_send_count_reset_at",
        ]

    def get_form(self, request: HttpRequest, obj: Any = None, change: bool = False, **kwargs: Any):
        # The flag checkboxes are form fields, not model fields: build the form from the model fields only.
        kwargs["fields"] = [
            f for f in self.get_fields(request, obj) if not f.startswith("flag:") and f != "effective_flags"
        ]
        kwargs["fields"] = [f for f in kwargs["fields"] if f not in self.get_readonly_fields(request, obj)]
        return super().get_form(request, obj, change=change, **kwargs)

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None):
        fields = list(self.base_readonly)
        if not is_platform_staff(request.user):
            fields += list(ABUSE_FIELDS)  # DOM-14: only platform staff change the abuse status
        return fields

    @admin.display(description="effective feature flags")
    def effective_flags(self, obj: OrganizationSettings) -> str:
        from owlat.flags import ai_needs_configuration, resolve_flags

        if obj is None or obj._state.adding:
            return "-"
        flags = resolve_flags(obj.feature_flags, obj.organization_id)
        text = ", ".join(f"{name}: {'on' if on else 'off'}" for name, on in flags.items())
        if ai_needs_configuration(obj.organization_id):  # AGT-30
            text += " — ai needs configuration: set a model provider (environment or Inbox → Model providers)"
        return text

    def has_add_permission(self, request: HttpRequest, *args: Any) -> bool:
        return False  # created with the organization (organization_create)

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def save_model(self, request: HttpRequest, obj: OrganizationSettings, form: Any, change: bool) -> None:
        abuse_changed = any(f in form.changed_data for f in ABUSE_FIELDS)
        if abuse_changed:
            if not is_platform_staff(request.user):
                raise ValidationError("Only platform staff change the abuse status.")
            stored = OrganizationSettings.objects.get(pk=obj.pk)
            new_status, new_reason = obj.abuse_status, obj.abuse_status_reason
            # Save everything else first, then let the abuse writer change and audit the status.
            obj.abuse_status, obj.abuse_status_reason = stored.abuse_status, stored.abuse_status_reason
            super().save_model(request, obj, form, change)
            organization_abuse_status_change(
                settings_row=obj, status=new_status, reason=new_reason, actor=self.actor(request)
            )
            obj.refresh_from_db()
            return
        super().save_model(request, obj, form, change)
