"""Campaign senders (DOM-12); sending domains are in `owlat.admin.domains`."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import ValidationError
from django.db import transaction
from django.http import HttpRequest

from owlat.admin_tenancy import (
    TenantModelAdmin,
)
from owlat.models import CampaignSender


class CampaignSenderForm(forms.ModelForm):
    class Meta:
        model = CampaignSender
        fields = ("organization", "email", "display_name", "is_enabled")

    def clean_email(self) -> str:
        from owlat.contacts import is_valid_email, normalize_email

        value = (self.cleaned_data.get("email") or "").strip()
        if not is_valid_email(value):
            raise ValidationError("Enter a valid email address.")
        return normalize_email(value)


@admin.register(CampaignSender)
class CampaignSenderAdmin(TenantModelAdmin):
    """DOM-12: curating senders is admin-only; at most one default (set with the action)."""

    form = CampaignSenderForm
    manage_permission = "settings:manage"
    list_display = ("email", "display_name", "is_enabled", "is_default", "created_by", "created_at")
    list_filter = ("is_enabled", "is_default")
    search_fields = ("email", "display_name")
    readonly_fields = ("is_default", "created_by", "created_at")
    actions = ("make_default",)

    def save_model(self, request: HttpRequest, obj: CampaignSender, form: Any, change: bool) -> None:
        if not change:
            obj.created_by = self.actor(request)
        super().save_model(request, obj, form, change)

    @admin.action(description="Make the default sender", permissions=["change"])
    def make_default(self, request: HttpRequest, queryset: Any) -> None:
        sender = queryset.first()
        if sender is None or queryset.count() != 1:
            self.message_user(request, "Select exactly one sender.", messages.ERROR)
            return
        with transaction.atomic():
            CampaignSender.objects.filter(organization_id=sender.organization_id, is_default=True).update(
                is_default=False
            )
            CampaignSender.objects.filter(pk=sender.pk).update(is_default=True)
        self.message_user(request, f"{sender.email} is now the default sender.", messages.SUCCESS)
