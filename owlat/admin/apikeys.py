"""API keys: created through `api_key_create` (the raw key shown once), revoked through `api_key_revoke`."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import ValidationError
from django.http import HttpRequest
from django.utils.html import format_html

from owlat.admin.service_writes import adopt_written_row
from owlat.admin_tenancy import (
    TenantModelAdmin,
)
from owlat.models import (
    ApiKey,
)

# --- API keys ----------------------------------------------------------------------------------------------


def _scope_choices() -> list[tuple[str, str]]:
    from owlat.apikeys import SCOPES

    return [(s, s) for s in SCOPES]


class ApiKeyForm(forms.ModelForm):
    scopes = forms.MultipleChoiceField(
        choices=_scope_choices, widget=forms.CheckboxSelectMultiple, required=True
    )

    class Meta:
        model = ApiKey
        fields = ("organization", "name", "scopes", "expires_at")

    def clean_scopes(self) -> list[str]:
        from owlat.apikeys import InvalidScopes, validate_scopes

        try:
            return validate_scopes(list(self.cleaned_data.get("scopes") or []))
        except InvalidScopes as exc:
            raise ValidationError(str(exc))


@admin.register(ApiKey)
class ApiKeyAdmin(TenantModelAdmin):
    form = ApiKeyForm
    manage_permission = "settings:manage"
    list_display = (
        "name",
        "key_prefix",
        "scope_list",
        "last_used_at",
        "is_active",
        "revoked_at",
        "expires_at",
    )
    list_filter = ("is_active",)
    search_fields = ("name", "key_prefix")
    readonly_fields = ("key_prefix", "is_active", "revoked_at", "last_used_at", "created_at")
    actions = ("revoke_keys",)

    def get_fields(self, request: HttpRequest, obj: Any = None):
        if obj is None:
            return ["organization", "name", "scopes", "expires_at"]
        return ["organization", "name", "key_prefix", "scopes", "expires_at", *self.readonly_fields[1:]]

    @admin.display(description="scopes")
    def scope_list(self, obj: ApiKey) -> str:
        return ", ".join(obj.scopes or [])

    def save_model(self, request: HttpRequest, obj: ApiKey, form: Any, change: bool) -> None:
        if change:
            super().save_model(request, obj, form, change)
            return
        from owlat.apikeys import api_key_create

        key, raw = api_key_create(
            organization_id=obj.organization_id,
            name=obj.name,
            scopes=list(form.cleaned_data["scopes"]),
            expires_at=obj.expires_at,
        )
        adopt_written_row(obj, key)
        messages.warning(
            request,
            format_html(
                "API key created. Copy it now — it is shown only once: <code>{}</code>",
                raw,
            ),
        )

    @admin.action(description="Revoke selected API keys", permissions=["change"])
    def revoke_keys(self, request: HttpRequest, queryset: Any) -> None:
        from owlat.apikeys import api_key_revoke

        revoked = sum(
            api_key_revoke(api_key_id=key.pk, organization_id=key.organization_id) for key in queryset
        )
        self.message_user(request, f"Revoked {revoked} API key(s).", messages.SUCCESS)
