"""The contact page's form (email, language and time zone checked as the API checks them; DOM-05/06's rule for a
contact without an email) and its inlines: custom properties and topic memberships."""

from __future__ import annotations

from typing import Any

from django import forms
from django.core.exceptions import ValidationError
from django.http import HttpRequest

from owlat.admin.organizations import is_timezone
from owlat.admin_tenancy import TenantTabularInline
from owlat.models import Contact, ContactPropertyValue, ContactTopic


class ContactForm(forms.ModelForm):
    class Meta:
        model = Contact
        fields = ("organization", "email", "first_name", "last_name", "language", "timezone", "notes")
        help_texts = {
            "language": "The language the contact's emails are sent in, when a template has it (else the "
            "template's default). Type to search.",
            "timezone": "The contact's IANA time zone. Type to search, e.g. Berlin.",
        }

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        from owlat.forms.languages import use_language_picker, use_time_zone_picker

        if "language" in self.fields:
            use_language_picker(self.fields["language"], self.instance.language, blank="(none)")
        if "timezone" in self.fields:
            use_time_zone_picker(self.fields["timezone"], self.instance.timezone, blank="(none)")

    def clean_email(self) -> str | None:
        from owlat.contacts import is_valid_email, normalize_email

        value = (self.cleaned_data.get("email") or "").strip()
        if not value:
            return None
        if not is_valid_email(value):
            raise ValidationError("Enter a valid email address.")
        return normalize_email(value)

    def clean_language(self) -> str | None:
        from owlat.api.serializers import LANGUAGE_RE

        value = (self.cleaned_data.get("language") or "").strip()
        if value and not LANGUAGE_RE.match(value):
            raise ValidationError("Choose a language from the list (a code such as de or pt-BR).")
        return value or None

    def clean_timezone(self) -> str | None:
        value = (self.cleaned_data.get("timezone") or "").strip()
        if value and not is_timezone(value):
            raise ValidationError("Enter an IANA time zone name such as Europe/Berlin.")
        return value or None

    def _has_other_identity(self) -> bool:
        if self.instance._state.adding or self.instance.pk is None:
            return False
        return self.instance.identities.exclude(channel="email").exists()

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean()
        email = cleaned.get("email")
        if (
            "email" in self.fields
            and not email
            and "email" not in self.errors
            and not self._has_other_identity()
        ):
            # DOM-05/06: the email is optional only for a contact reached on another channel (phone, chat …).
            self.add_error(
                "email",
                "Enter an email address: a contact without one needs another identity (phone, chat …), "
                "which the API or an import adds.",
            )
        org = cleaned.get("organization") or getattr(self.instance, "organization", None)
        if email and org is not None:
            from owlat.contacts import live_contacts

            clash = live_contacts(org.pk).filter(email=email)
            if not self.instance._state.adding:
                clash = clash.exclude(pk=self.instance.pk)
            if clash.exists():
                self.add_error("email", "A contact with this email already exists.")
        return cleaned


class ContactPropertyValueInline(TenantTabularInline):
    hide_title = True  # rows show their fields, not a "Model object (uuid)" line
    model = ContactPropertyValue
    manage_permission = "contacts:manage"
    fields = ("property", "value")
    extra = 0
    verbose_name = "custom property"
    verbose_name_plural = "custom properties"

    def get_queryset(self, request: HttpRequest):
        return super().get_queryset(request).select_related("property")


class ContactTopicForm(forms.ModelForm):
    skip_doi = forms.BooleanField(
        label="Consent given (skip double opt-in)",
        required=False,
        help_text="New memberships of a double-opt-in topic start a confirmation mail unless ticked.",
    )

    class Meta:
        model = ContactTopic
        fields = ("topic",)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if not self.instance._state.adding:
            self.fields["topic"].disabled = True
            self.fields["skip_doi"].disabled = True


class ContactTopicInline(TenantTabularInline):
    hide_title = True  # rows show their fields, not a "Model object (uuid)" line
    model = ContactTopic
    form = ContactTopicForm
    manage_permission = "contacts:manage"
    fields = ("topic", "skip_doi", "added_at", "pending_doi_confirmation", "consent_source", "consent_ip")
    readonly_fields = ("added_at", "pending_doi_confirmation", "consent_source", "consent_ip")
    extra = 0
    verbose_name = "topic membership"
    verbose_name_plural = "topic memberships"

    def get_queryset(self, request: HttpRequest):
        return super().get_queryset(request).select_related("topic")
