"""Sub-forms inside an admin form: a select chooses which sub-form applies; its cleaned data becomes JSON.

The parent form declares a `NestedFormsField` and builds its sub-forms lazily (the tenant admin sets the
organization on the instance after the form's `__init__`), then in `clean()` validates the chosen sub-form with
`clean_nested()`, which turns every sub-form error into one message on the nested field that names the field:
"Template: Choose a template."
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

from django import forms
from django.apps import apps
from django.utils.html import format_html

SubForms = Mapping[str, forms.BaseForm]


def form_organization_id(form: forms.ModelForm) -> Any:
    """The organization a tenant model form's sub-forms are for: the instance's, or (a new row, platform staff)
    the one picked in the form's `organization` field once cleaned; None before that."""
    if form.instance.organization_id:
        return form.instance.organization_id
    org = getattr(form, "cleaned_data", {}).get("organization")
    return getattr(org, "pk", None)


def _unfold_widget(widget: forms.Widget) -> forms.Widget:
    """The django-unfold counterpart of a plain widget (same attrs and choices), when unfold is installed."""
    from unfold import widgets as uw

    attrs = dict(widget.attrs)
    kind = type(widget)  # exact types only: special widgets (pickers) keep their own class
    if kind is forms.Select:
        new: forms.Widget = uw.UnfoldAdminSelectWidget(attrs=attrs)
        new.choices = widget.choices
        return new
    if kind is forms.NumberInput:
        return uw.UnfoldAdminDecimalFieldWidget(attrs=attrs)
    if kind is forms.TextInput:
        return uw.UnfoldAdminTextInputWidget(attrs=attrs)
    if kind is forms.EmailInput:
        return uw.UnfoldAdminEmailInputWidget(attrs=attrs)
    if kind is forms.Textarea:
        return uw.UnfoldAdminTextareaWidget(attrs=attrs)
    return widget


def styled(form: forms.BaseForm) -> forms.BaseForm:
    """Give the form's widgets the admin theme's look (django-unfold when installed, Django's admin otherwise)."""
    if not apps.is_installed("unfold"):
        return form
    for field in form.fields.values():
        field.widget = _unfold_widget(field.widget)
        if isinstance(field, forms.ChoiceField):
            field.widget.choices = field.choices
    return form


class NestedFormsWidget(forms.Widget):
    """Renders sub-forms; the one whose key equals the value of the `switch` select is shown (builder.js)."""

    template_name = "owlat/forms/nested.html"

    def __init__(self, *, switch: str = "", attrs: dict[str, Any] | None = None) -> None:
        super().__init__(attrs)
        self.switch = switch
        self.get_forms: Callable[[], SubForms] = dict

    def _get_media(self) -> forms.Media:
        media = forms.Media(js=["owlat/forms/builder.js"], css={"all": ["owlat/forms/builder.css"]})
        for form in self.get_forms().values():
            media = media + form.media
            nested = getattr(form, "conditions", None)  # a formset inside (the segment builder)
            if isinstance(nested, forms.BaseFormSet):
                media = media + nested.media
        return media

    media = property(_get_media)

    def get_context(self, name: str, value: Any, attrs: dict[str, Any] | None) -> dict[str, Any]:
        context = super().get_context(name, value, attrs)
        context["subforms"] = list(self.get_forms().items())
        context["switch"] = self.switch
        return context

    def value_from_datadict(self, data: Any, files: Any, name: str) -> Any:
        return None  # the parent form reads the sub-forms, not this field

    def value_omitted_from_data(self, data: Any, files: Any, name: str) -> bool:
        return False


class NestedFormsField(forms.Field):
    """Placeholder field that carries the sub-forms' widget and errors; it has no value of its own."""

    widget = NestedFormsWidget

    def __init__(self, *, switch: str = "", **kwargs: Any) -> None:
        kwargs.setdefault("required", False)
        kwargs.setdefault("widget", NestedFormsWidget(switch=switch))
        super().__init__(**kwargs)

    def has_changed(self, initial: Any, data: Any) -> bool:
        return False  # the parent form decides from the sub-form (it knows which one applies)


def error_messages(form: forms.BaseForm) -> list[str]:
    """A sub-form's errors as messages that name the field: "<Label>: <message>"."""
    out: list[str] = []
    for name, errors in form.errors.items():
        label = form.fields[name].label if name in form.fields else None
        for message in errors:
            out.append(f"{label}: {message}" if label else message)
    return out


def clean_nested(parent: forms.BaseForm, field_name: str, form: forms.BaseForm | None) -> Any:
    """Validate the chosen sub-form; on errors add them to `field_name` of `parent` and return None.

    A valid sub-form returns its `config` (set by its `clean()`): the JSON the model stores.
    """
    if form is None:
        return None
    if not form.is_valid():
        for message in error_messages(form):
            parent.add_error(field_name, message)
        return None
    return form.cleaned_data.get("config")


def initial_from(form_class: Any, config: Any) -> dict[str, Any]:
    """Initial data of a sub-form from a stored config (classes offer `initial_from_config`)."""
    fn = getattr(form_class, "initial_from_config", None)
    if fn is None or not isinstance(config, dict):
        return {}
    try:
        return fn(config)
    except (TypeError, ValueError, KeyError):
        return {}  # a config the form cannot show starts empty; the stored JSON stays visible read-only


def json_block(value: Any) -> str:
    """The stored JSON, read-only, for the curious (and for API users)."""
    text = json.dumps(value) if value in (None, {}) else json.dumps(value, indent=2, ensure_ascii=False)
    return format_html('<pre class="owlat-json">{}</pre>', text)
