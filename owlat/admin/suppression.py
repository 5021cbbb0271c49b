"""The suppression list (DOM-10): manual rows are added and removed; bounce/complaint rows stay as evidence."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin
from django.core.exceptions import ValidationError
from django.http import HttpRequest

from owlat.admin.service_writes import adopt_written_row
from owlat.admin_tenancy import (
    TenantModelAdmin,
)
from owlat.models import (
    BlockedEmail,
    BlockReason,
)

# --- suppression list ----------------------------------------------------------------------------------------


class BlockedEmailForm(forms.ModelForm):
    class Meta:
        model = BlockedEmail
        fields = ("organization", "email", "notes")

    def clean_email(self) -> str:
        from owlat.contacts import is_valid_email, normalize_email

        value = (self.cleaned_data.get("email") or "").strip()
        if not is_valid_email(value):
            raise ValidationError("Enter a valid email address.")
        return normalize_email(value)


@admin.register(BlockedEmail)
class BlockedEmailAdmin(TenantModelAdmin):
    """DOM-10: operators add and remove manual rows; bounce/complaint rows are evidence and stay."""

    form = BlockedEmailForm
    manage_permission = "contacts:manage"
    list_display = ("email", "reason", "bounce_type", "source_type", "created_at")
    list_filter = ("reason", "bounce_type")
    search_fields = ("email",)
    readonly_fields = ("reason", "bounce_type", "source_type", "source_id", "created_at", "updated_at")

    def get_fields(self, request: HttpRequest, obj: Any = None):
        if obj is None:
            return ["organization", "email", "notes"]
        return ["organization", "email", "notes", *self.readonly_fields]

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False if obj is not None else super().has_change_permission(request, obj)

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        if obj is not None and obj.reason != BlockReason.MANUAL:
            return False
        return super().has_delete_permission(request, obj)

    def save_model(self, request: HttpRequest, obj: BlockedEmail, form: Any, change: bool) -> None:
        from owlat.suppression import suppress

        row = suppress(
            organization_id=obj.organization_id,
            email=obj.email,
            reason=BlockReason.MANUAL,
            notes=obj.notes or None,
            source_type=None,
        )
        adopt_written_row(obj, row)

    def delete_model(self, request: HttpRequest, obj: BlockedEmail) -> None:
        from owlat.suppression import unsuppress

        unsuppress(organization_id=obj.organization_id, email=obj.email)

    def delete_queryset(self, request: HttpRequest, queryset: Any) -> None:
        for row in queryset.filter(reason=BlockReason.MANUAL):
            self.delete_model(request, row)
