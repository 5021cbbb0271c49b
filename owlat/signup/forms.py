"""The forms that check a sign-up form's settings, its fields and its translations: the admin's form builder and
the API's writes (`owlat.signup.writes`) validate through the same ones."""

from __future__ import annotations

from typing import Any

from django import forms
from django.core.exceptions import ValidationError
from django.db import models

from owlat.forms.languages import LANGUAGES
from owlat.models import SignupFieldKind, SignupForm, SignupFormField, SignupFormText
from owlat.signup.services import TEXT_FIELDS

MAX_ORIGINS = 50


def https_urls(field: models.Field, **kwargs: Any) -> forms.Field | None:
    """Form fields of a model form; a web address typed without a scheme means https."""
    if isinstance(field, models.URLField):
        kwargs.setdefault("assume_scheme", "https")
    return field.formfield(**kwargs)


class SignupFormSettingsForm(forms.ModelForm):
    """The form's own settings (everything but its topics, fields and translations)."""

    class Meta:
        model = SignupForm
        formfield_callback = https_urls
        fields = (
            "name",
            "is_active",
            "require_double_opt_in",
            "title",
            "description",
            "consent_text",
            "submit_label",
            "brand_color",
            "pending_message",
            "success_message",
            "confirmed_message",
            "pending_redirect_url",
            "success_redirect_url",
            "confirmed_redirect_url",
            "allowed_origins",
        )
        widgets = {"brand_color": forms.TextInput(attrs={"type": "color"})}

    def clean_allowed_origins(self) -> str:
        from urllib.parse import urlsplit

        lines = [line.strip() for line in self.cleaned_data["allowed_origins"].splitlines() if line.strip()]
        if len(lines) > MAX_ORIGINS:
            raise ValidationError(f"List at most {MAX_ORIGINS} origins.")
        for line in lines:
            parts = urlsplit(line)
            if parts.scheme not in ("http", "https") or not parts.netloc or parts.path not in ("", "/"):
                raise ValidationError(
                    f"“{line}” is not an origin: write the scheme and host only, e.g. https://www.example.com."
                )
        return "\n".join(lines)


class SignupFormFieldForm(forms.ModelForm):
    class Meta:
        model = SignupFormField
        fields = ("kind", "property", "label", "required", "position")

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean()
        if cleaned.get("kind") == SignupFieldKind.PROPERTY and not cleaned.get("property"):
            self.add_error("property", "Pick the contact property this field fills.")
        if cleaned.get("kind") != SignupFieldKind.PROPERTY:
            cleaned["property"] = None
        return cleaned


class SignupFormTextForm(forms.ModelForm):
    language = forms.ChoiceField(choices=[("", "—"), *LANGUAGES], help_text="The visitor's language.")

    class Meta:
        model = SignupFormText
        formfield_callback = https_urls
        fields = ("language", *TEXT_FIELDS)
