"""Admin screen of the operator handling rules (AGT-17 [orig]): pickers for what to match and what to do."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin

from inbox.configuration import handling_rule_errors
from inbox.models import HandlingRule
from owlat.admin_tenancy import TenantModelAdmin


class HandlingRuleForm(forms.ModelForm):
    class Meta:
        model = HandlingRule
        fields = ("organization", "name", "match", "value", "action", "category", "position", "is_active")

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        if self.errors:
            return data
        for name, message in handling_rule_errors(data).items():  # the rules the API applies too
            self.add_error(name if name in self.fields else None, message)
        return data


@admin.register(HandlingRule)
class HandlingRuleAdmin(TenantModelAdmin):
    manage_permission = "organization:manage"
    form = HandlingRuleForm
    list_display = ("name", "match", "value", "action", "category", "position", "is_active")
    list_filter = ("action", "is_active")
    ordering = ("position", "name")
