"""Step settings (AUT-31 … AUT-33): a form per step type; `cleaned_data["config"]` is the stored step config."""

from __future__ import annotations

import uuid
from abc import ABCMeta, abstractmethod
from decimal import Decimal
from typing import Any

from django import forms
from django.conf import settings
from django.urls import NoReverseMatch, reverse
from django.utils.html import format_html
from django.utils.safestring import mark_safe

from automations.models import StepType
from automations.steps.delay import UNIT_MS
from owlat.forms.conditions import ConditionForm
from owlat.forms.nested import styled

PREVIEW_PLACEHOLDER = "00000000-0000-0000-0000-000000000000"


def _reverse(name: str, *args: Any) -> str | None:
    try:
        return reverse(name, args=args)
    except NoReverseMatch:
        return None


class TemplatePickerWidget(forms.Select):
    """A search-as-you-type template select (Django admin's select2) backed by the automation admin's
    `template-autocomplete/` view; only the selected template is rendered into the page."""

    def __init__(self, attrs: dict[str, Any] | None = None) -> None:
        super().__init__(attrs)
        self.url = ""

    @property
    def media(self) -> forms.Media:
        extra = "" if settings.DEBUG else ".min"
        return forms.Media(
            js=(
                f"admin/js/vendor/jquery/jquery{extra}.js",
                f"admin/js/vendor/select2/select2.full{extra}.js",
                "admin/js/jquery.init.js",
                "admin/js/autocomplete.js",
            ),
            css={"screen": (f"admin/css/vendor/select2/select2{extra}.css", "admin/css/autocomplete.css")},
        )

    def build_attrs(
        self, base_attrs: dict[str, Any], extra_attrs: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        attrs = super().build_attrs(base_attrs, extra_attrs)
        attrs.update(
            {
                "data-ajax--cache": "true",
                "data-ajax--delay": 250,
                "data-ajax--type": "GET",
                "data-ajax--url": self.url,
                "data-theme": "admin-autocomplete",
                "data-allow-clear": "false",
                "data-placeholder": "Search templates by name",
                "data-width": "22rem",
                "class": f"{attrs.get('class', '')} admin-autocomplete owlat-template-picker".strip(),
            }
        )
        return attrs

    def optgroups(self, name: str, value: list[Any], attrs: dict[str, Any] | None = None) -> list[Any]:
        selected = [v for v in value if v]
        valid = []
        for v in selected:
            try:
                valid.append(uuid.UUID(str(v)))
            except ValueError:
                continue
        options = [self.create_option(name, "", "", not valid, 0)]
        field = self.choices.field  # type: ignore[attr-defined]
        for i, obj in enumerate(field.queryset.filter(pk__in=valid), start=1):
            options.append(self.create_option(name, str(obj.pk), field.label_from_instance(obj), True, i))
        return [(None, options, 0)]


class TemplateChoiceField(forms.ModelChoiceField):
    def label_from_instance(self, obj: Any) -> str:
        return f"{obj.name} ({obj.status})"


class _AbstractFormMeta(ABCMeta, type(forms.Form)):
    """Django's form metaclass with ABCMeta, so the base below cannot be used without its `to_config`."""


class StepSettingsForm(forms.Form, metaclass=_AbstractFormMeta):
    intro = ""

    def __init__(self, *args: Any, organization_id: Any = None, **kwargs: Any) -> None:
        kwargs.pop("step_choices", None)
        super().__init__(*args, **kwargs)
        self.organization_id = organization_id
        styled(self)

    @abstractmethod
    def to_config(self) -> dict[str, Any]:
        """The step's stored config from the cleaned fields; every step type's form defines it."""

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean()
        if not self.errors:
            cleaned["config"] = self.to_config()
        return cleaned


class EmailStepForm(StepSettingsForm):
    intro = "Sends this template to the contact."

    template = TemplateChoiceField(
        label="Template",
        queryset=None,
        widget=TemplatePickerWidget,
        error_messages={
            "required": "Choose a template.",
            "invalid_choice": "Choose one of this organization's templates.",
        },
    )
    subject_override = forms.CharField(
        label="Subject (optional)",
        required=False,
        max_length=998,
        help_text="Leave empty to use the template's subject. {{firstName}} and friends work here too.",
    )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        from templates.models import EmailTemplate

        field = self.fields["template"]
        field.queryset = EmailTemplate.objects.filter(organization_id=self.organization_id).order_by("name")
        url = _reverse("admin:automations_automation_template_autocomplete")
        field.widget.url = f"{url}?organization={self.organization_id or ''}" if url else ""

    @staticmethod
    def initial_from_config(config: dict[str, Any]) -> dict[str, Any]:
        return {"template": config.get("emailTemplateId"), "subject_override": config.get("subjectOverride")}

    def to_config(self) -> dict[str, Any]:
        config: dict[str, Any] = {"emailTemplateId": str(self.cleaned_data["template"].pk)}
        if self.cleaned_data.get("subject_override"):
            config["subjectOverride"] = self.cleaned_data["subject_override"]
        return config

    def extra_html(self) -> str:
        """A preview link that follows the picked template (builder.js) and a link to create one."""
        preview = _reverse("admin:templates_emailtemplate_preview", PREVIEW_PLACEHOLDER)
        add = _reverse("admin:templates_emailtemplate_add")
        current = self["template"].value()
        href = preview.replace(PREVIEW_PLACEHOLDER, str(current)) if preview and current else ""
        return format_html(
            '<div class="owlat-links"><a class="owlat-link owlat-preview" target="_blank" href="{}" '
            'data-url-template="{}" data-placeholder="{}"{}>Preview the template</a>{}</div>',
            href or "#",
            preview or "",
            PREVIEW_PLACEHOLDER,
            "" if href else mark_safe(" hidden"),
            format_html(' · <a class="owlat-link" target="_blank" href="{}">New template</a>', add)
            if add
            else "",
        )


UNIT_CHOICES = [(unit, unit) for unit in UNIT_MS]


class DelayStepForm(StepSettingsForm):
    intro = "Waits this long before the next step."
    layout = "sentence"

    duration = forms.DecimalField(
        label="Wait",
        min_value=Decimal("0.001"),
        max_digits=12,
        decimal_places=3,
        error_messages={
            "required": "Enter how long to wait, e.g. 2.",
            "invalid": "Enter a number, e.g. 2 or 1.5.",
            "min_value": "Enter a number greater than 0.",
            "max_digits": "Enter a shorter number (at most 12 digits).",
            "max_decimal_places": "Use at most 3 decimal places.",
        },
    )
    unit = forms.ChoiceField(
        label="Unit",
        choices=UNIT_CHOICES,
        initial="days",
        error_messages={"required": "Choose minutes, hours, days or weeks."},
    )

    @staticmethod
    def initial_from_config(config: dict[str, Any]) -> dict[str, Any]:
        return {"duration": config.get("duration"), "unit": config.get("unit")}

    def to_config(self) -> dict[str, Any]:
        duration: Decimal = self.cleaned_data["duration"]
        value: int | float = int(duration) if duration == duration.to_integral_value() else float(duration)
        return {"duration": value, "unit": self.cleaned_data["unit"]}


class ConditionStepForm(ConditionForm):
    """A condition (AUT-34) and where each answer leads (AUT-33)."""

    intro = "Tests the contact and continues with the yes or the no step."

    yes_branch = forms.ChoiceField(label="If yes, go to", required=False)
    no_branch = forms.ChoiceField(label="If no, go to", required=False)

    def __init__(self, *args: Any, step_choices: list[tuple[str, str]] | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        choices = [("", "the next step"), *(step_choices or [])]
        for name in ("yes_branch", "no_branch"):
            self.fields[name].choices = choices

    @staticmethod
    def initial_from_config(config: dict[str, Any]) -> dict[str, Any]:
        initial = ConditionForm.initial_from_config(config.get("condition") or {})
        for key, name in (("yesBranchStepIndex", "yes_branch"), ("noBranchStepIndex", "no_branch")):
            value = config.get(key)
            initial[name] = "" if value is None else str(value)
        return initial

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean()
        condition = cleaned.pop("config", None)
        if condition is not None and not self.errors:
            cleaned["config"] = {
                "condition": condition,
                "yesBranchStepIndex": _index(cleaned.get("yes_branch")),
                "noBranchStepIndex": _index(cleaned.get("no_branch")),
            }
        return cleaned


class EndStepForm(StepSettingsForm):
    intro = "Ends the automation for the contact here: no later step runs. Put one at the end of a branch."

    @staticmethod
    def initial_from_config(config: dict[str, Any]) -> dict[str, Any]:
        return {}

    def to_config(self) -> dict[str, Any]:
        return {}


def _index(raw: Any) -> int | None:
    return int(raw) if raw not in (None, "") else None


STEP_FORMS: dict[str, type[forms.Form]] = {
    StepType.EMAIL: EmailStepForm,
    StepType.DELAY: DelayStepForm,
    StepType.CONDITION: ConditionStepForm,
    StepType.END: EndStepForm,
}
