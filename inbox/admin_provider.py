"""Admin form of an organization's own model provider (AGT-28 [orig]): a provider picker, an optional base URL
(checked by the outbound-HTTP guard) and an API key typed into a password field — stored encrypted, never shown
again; leaving it empty keeps the stored key."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin
from django.http import HttpRequest

from inbox.configuration import provider_setting_errors
from inbox.models import LlmProviderSetting
from inbox.provider_settings import encrypt_key, forget
from owlat.admin_tenancy import TenantModelAdmin
from owlat.outbound import validate_outbound_url


class LlmProviderForm(forms.ModelForm):
    base_url = forms.URLField(
        required=False,
        assume_scheme="https",
        max_length=500,
        validators=[validate_outbound_url],
        help_text=LlmProviderSetting._meta.get_field("base_url").help_text,
    )
    api_key = forms.CharField(
        required=False,
        strip=True,
        widget=forms.PasswordInput(render_value=False, attrs={"autocomplete": "new-password"}),
        help_text="Stored encrypted and never shown again. Leave empty to keep the stored key.",
    )
    clear_api_key = forms.BooleanField(required=False, help_text="Remove the stored key.")

    class Meta:
        model = LlmProviderSetting
        fields = ("organization", "provider", "base_url")

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        if self.errors:
            return data
        has_key = bool(data.get("api_key")) or (
            bool(self.instance.api_key_encrypted) and not data.get("clear_api_key")
        )
        errors = provider_setting_errors(  # the rules the API applies too
            provider=data.get("provider"), base_url=data.get("base_url") or "", has_key=has_key
        )
        for name, message in errors.items():
            self.add_error(name, message)
        return data

    def save(self, commit: bool = True) -> LlmProviderSetting:
        if self.cleaned_data.get("clear_api_key"):
            self.instance.api_key_encrypted = ""
        if self.cleaned_data.get("api_key"):
            self.instance.api_key_encrypted = encrypt_key(self.cleaned_data["api_key"])
        return super().save(commit=commit)


@admin.register(LlmProviderSetting)
class LlmProviderSettingAdmin(TenantModelAdmin):
    manage_permission = "organization:manage"
    form = LlmProviderForm
    list_display = ("organization", "provider", "base_url", "key_stored", "updated_at")
    fields = ("organization", "provider", "base_url", "api_key", "clear_api_key", "key_state")
    readonly_fields = ("key_state",)

    @admin.display(description="key stored", boolean=True)
    def key_stored(self, obj: LlmProviderSetting) -> bool:
        return bool(obj.api_key_encrypted)

    @admin.display(description="stored key")
    def key_state(self, obj: LlmProviderSetting) -> str:
        return "a key is stored (encrypted)" if obj.api_key_encrypted else "no key stored"

    def save_model(self, request: HttpRequest, obj: LlmProviderSetting, form: Any, change: bool) -> None:
        super().save_model(request, obj, form, change)
        forget(obj.organization_id)

    def delete_model(self, request: HttpRequest, obj: LlmProviderSetting) -> None:
        organization_id = obj.organization_id
        super().delete_model(request, obj)
        forget(organization_id)
