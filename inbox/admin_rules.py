"""Admin screen of the operator handling rules (AGT-17 [orig]): pickers for what to match and what to do."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin

from inbox.models import HandlingRule
from owlat.admin_tenancy import TenantModelAdmin


class HandlingRuleForm(forms.ModelForm):
    class Meta:
        model = HandlingRule
        fields = ("organization", "name", "match", "value", "action", "category", "position", "is_active")

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        if data.get("action") == "relabel" and not data.get("category"):
            self.add_error("category", "Pick the category to relabel to.")
        if data.get("action") == "archive" and data.get("category"):
            self.add_error("category", "Leave the category empty for an archive rule.")
        return data


@admin.register(HandlingRule)
class HandlingRuleAdmin(TenantModelAdmin):
    manage_permission = "organization:manage"
    form = HandlingRuleForm
    list_display = ("name", "match", "value", "action", "category", "position", "is_active")
    list_filter = ("action", "is_active")
    ordering = ("position", "name")
