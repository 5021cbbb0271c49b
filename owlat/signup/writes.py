"""Create, change and delete a sign-up form outside the admin (the REST API). The form's settings, each field asked
and each translation are checked by the admin's own forms (`owlat.signup.forms`); the topics offered and the
contact properties asked must be the organization's. A refusal names the field in the API's spelling
(`topics[0].topicId`)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from django import forms
from django.db import transaction
from django.forms.models import model_to_dict

from owlat.models import (
    ContactProperty,
    Segment,
    SignupFieldKind,
    SignupForm,
    SignupFormField,
    SignupFormText,
    SignupFormTopic,
    Topic,
)
from owlat.signup.forms import SignupFormFieldForm, SignupFormSettingsForm, SignupFormTextForm

#: API key → model field of the form's own settings
SETTINGS_KEYS = {
    "name": "name",
    "isActive": "is_active",
    "requireDoubleOptIn": "require_double_opt_in",
    "title": "title",
    "description": "description",
    "consentText": "consent_text",
    "submitLabel": "submit_label",
    "brandColor": "brand_color",
    "pendingMessage": "pending_message",
    "successMessage": "success_message",
    "confirmedMessage": "confirmed_message",
    "pendingRedirectUrl": "pending_redirect_url",
    "successRedirectUrl": "success_redirect_url",
    "confirmedRedirectUrl": "confirmed_redirect_url",
    "allowedOrigins": "allowed_origins",
}
#: API key → model field of a translation
TEXT_KEYS = {
    "language": "language",
    "title": "title",
    "description": "description",
    "consentText": "consent_text",
    "submitLabel": "submit_label",
    "successMessage": "success_message",
    "pendingMessage": "pending_message",
    "confirmedMessage": "confirmed_message",
    "successRedirectUrl": "success_redirect_url",
    "pendingRedirectUrl": "pending_redirect_url",
}
_CAMEL = {**{v: k for k, v in SETTINGS_KEYS.items()}, **{v: k for k, v in TEXT_KEYS.items()}}


class SignupFormInvalid(Exception):
    def __init__(self, message: str, field: str) -> None:
        super().__init__(message)
        self.message, self.field = message, field


@dataclass(frozen=True)
class SignupFormChanges:
    """What a write changes: `settings` in model names; `topics`, `fields`, `texts` replace the form's rows when
    given (None: kept as they are)."""

    settings: dict[str, Any]
    topics: list[dict[str, Any]] | None = None
    fields: list[dict[str, Any]] | None = None
    texts: list[dict[str, Any]] | None = None


def _checked(form: forms.ModelForm, prefix: str = "") -> forms.ModelForm:
    if not form.is_valid():
        name, errors = next(iter(form.errors.items()))
        key = _CAMEL.get(name, name) if name != "__all__" else prefix.rstrip(".") or "body"
        raise SignupFormInvalid(f"{prefix}{key}: {errors[0]}" if prefix else str(errors[0]), f"{prefix}{key}")
    return form


def _settings_form(
    organization_id: Any, form: SignupForm | None, settings: dict[str, Any]
) -> forms.ModelForm:
    instance = form or SignupForm(organization_id=organization_id)
    data = model_to_dict(instance, fields=SignupFormSettingsForm._meta.fields) if form else {}
    data.update(settings)
    if isinstance(data.get("allowed_origins"), list):
        data["allowed_origins"] = "\n".join(data["allowed_origins"])
    for name in SignupFormSettingsForm._meta.fields:
        if name not in data and form is None:
            default = SignupForm._meta.get_field(name).get_default()
            data[name] = default
    return _checked(SignupFormSettingsForm(data=data, instance=instance))


def _topic_rows(organization_id: Any, topics: list[dict[str, Any]]) -> list[SignupFormTopic]:
    if not topics:
        raise SignupFormInvalid("topics: offer at least one topic", "topics")
    ids = [str(t["topicId"]) for t in topics]
    known = Topic.objects.filter(organization_id=organization_id, pk__in=ids).values_list("pk", flat=True)
    known_ids = {str(pk) for pk in known}
    seen: set[str] = set()
    for i, topic_id in enumerate(ids):
        field = f"topics[{i}].topicId"
        if topic_id not in known_ids:
            raise SignupFormInvalid(f"{field}: topic not found", field)
        if topic_id in seen:
            raise SignupFormInvalid(f"{field}: each topic is offered once; topic ids must be unique", field)
        seen.add(topic_id)
    return [
        SignupFormTopic(
            organization_id=organization_id,
            topic_id=t["topicId"],
            preselected=t.get("preselected", True),
            position=i,
        )
        for i, t in enumerate(topics)
    ]


def _field_rows(organization_id: Any, fields: list[dict[str, Any]]) -> list[SignupFormField]:
    rows, seen = [], set()
    for i, spec in enumerate(fields):
        prefix, prop = f"fields[{i}].", None
        if spec["kind"] == SignupFieldKind.PROPERTY:
            key = spec.get("propertyKey")
            prop = (
                ContactProperty.objects.filter(organization_id=organization_id, key=key).first()
                if key
                else None
            )
            if prop is None:
                raise SignupFormInvalid(
                    f"{prefix}propertyKey: contact property not found", f"{prefix}propertyKey"
                )
        identity = (spec["kind"], prop.pk if prop else None)
        if identity in seen:
            message = f"{prefix}kind: each field is asked once; kinds and property keys must be unique"
            raise SignupFormInvalid(message, f"{prefix}kind")
        seen.add(identity)
        data = {
            "kind": spec["kind"],
            "property": prop.pk if prop else None,
            "label": spec.get("label", ""),
            "required": spec.get("required", False),
            "position": i,
        }
        form = SignupFormFieldForm(data=data)
        form.fields["property"].queryset = ContactProperty.objects.filter(organization_id=organization_id)
        row = _checked(form, prefix).save(commit=False)
        row.organization_id = organization_id
        rows.append(row)
    return rows


def _text_rows(organization_id: Any, texts: list[dict[str, Any]]) -> list[SignupFormText]:
    rows, seen = [], set()
    for i, spec in enumerate(texts):
        prefix = f"texts[{i}]."
        form = _checked(SignupFormTextForm(data={TEXT_KEYS[k]: v for k, v in spec.items()}), prefix)
        if form.cleaned_data["language"] in seen:
            message = f"{prefix}language: one translation per language; languages must be unique"
            raise SignupFormInvalid(message, f"{prefix}language")
        seen.add(form.cleaned_data["language"])
        row = form.save(commit=False)
        row.organization_id = organization_id
        rows.append(row)
    return rows


def signup_form_write(
    *, organization_id: Any, form: SignupForm | None, changes: SignupFormChanges
) -> SignupForm:
    """Create (`form` None: `topics` required) or change a form; every part is checked before anything is
    written, then written in one transaction."""
    settings_form = _settings_form(organization_id, form, changes.settings)
    if form is None and changes.topics is None:
        raise SignupFormInvalid("topics: offer at least one topic", "topics")
    topics = None if changes.topics is None else _topic_rows(organization_id, changes.topics)
    fields = None if changes.fields is None else _field_rows(organization_id, changes.fields)
    texts = None if changes.texts is None else _text_rows(organization_id, changes.texts)
    with transaction.atomic():
        saved = settings_form.save()
        for model, rows in ((SignupFormTopic, topics), (SignupFormField, fields), (SignupFormText, texts)):
            if rows is None:
                continue
            model.objects.filter(form=saved).delete()
            for row in rows:
                row.form = saved
            model.objects.bulk_create(rows)
    return saved


def segments_using_form(organization_id: Any, form_id: Any) -> list[dict[str, str]]:
    """Segments whose conditions name the form ("joined through form F")."""
    needle = f'"{form_id}"'
    return [
        {"kind": "segment", "id": str(pk)}
        for pk, filters in Segment.objects.filter(organization_id=organization_id).values_list(
            "pk", "filters"
        )
        if needle in json.dumps(filters or {})
    ]
