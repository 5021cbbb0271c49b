"""The automation editor's model forms: the trigger settings and each step's settings as sub-forms.

The type select (`trigger_type`, `step_type`) chooses the sub-form; `clean()` turns it into the JSON the model
stores (`cleaned_data["trigger_config"]`, `cleaned_data["config"]`), checked once more by the services'
validators (organization references, API-24) so the admin and the API store the same shapes.
"""

from __future__ import annotations

from functools import cached_property
from typing import Any

from django import forms

from automations import services
from automations.admin_forms.steps import STEP_FORMS
from automations.admin_forms.triggers import TRIGGER_FORMS
from automations.models import Automation, AutomationStep
from owlat.forms.nested import (  # noqa: F401
    NestedFormsField,
    clean_nested,
    form_organization_id,
    initial_from,
    json_block,
    styled,
)


class AutomationForm(forms.ModelForm):
    """Name, description, trigger type and the trigger's settings (AUT-15)."""

    trigger_settings = NestedFormsField(label="Trigger settings", switch="trigger_type")

    class Meta:
        model = Automation
        fields = ("name", "description", "trigger_type", "unsubscribe_footer", "track_engagement")
        widgets = {"description": forms.Textarea(attrs={"rows": 2})}

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["trigger_settings"].widget.get_forms = lambda: self.trigger_forms

    @cached_property
    def trigger_forms(self) -> dict[str, forms.Form]:
        org = form_organization_id(self)
        stored_type, stored = self.instance.trigger_type, self.instance.trigger_config
        return {
            kind: cls(
                self.data if self.is_bound else None,
                prefix="trigger",
                initial=initial_from(cls, stored) if kind == stored_type else {},
                organization_id=org,
            )
            for kind, cls in TRIGGER_FORMS.items()
        }

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean()
        if "trigger_type" not in self.fields or self.fields["trigger_type"].disabled:
            return cleaned  # AUT-02: the trigger is read-only outside draft
        trigger_type = cleaned.get("trigger_type")
        if not trigger_type:
            return cleaned
        before = len(self.errors.get("trigger_settings", []))
        config = clean_nested(self, "trigger_settings", self.trigger_forms.get(trigger_type))
        if len(self.errors.get("trigger_settings", [])) > before:
            return cleaned
        try:
            cleaned["trigger_type"], cleaned["trigger_config"] = services.validate_trigger(
                trigger_type, config, organization_id=form_organization_id(self)
            )
        except services.AutomationInvalid as exc:
            self.add_error("trigger_settings", exc.message)
        return cleaned


class StepForm(forms.ModelForm):
    """One step: its type, its settings (the sub-form of that type) and its position."""

    settings = NestedFormsField(label="Settings", switch="step_type")
    position = forms.TypedChoiceField(
        label="Move to",
        required=False,
        coerce=int,
        empty_value=None,
        help_text="Move this step to another place in the list.",
    )

    class Meta:
        model = AutomationStep
        fields = ("step_type",)

    def __init__(self, *args: Any, step_choices: list[tuple[str, str]] | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.step_choices = step_choices or []
        self.fields["settings"].widget.get_forms = lambda: self.config_forms
        styled(self)
        existing = [(v, label) for v, label in self.step_choices if not label.endswith("(added below)")]
        self.fields["position"].choices = [("", "—"), *existing]
        if self.instance._state.adding:
            self.fields["position"].widget = forms.HiddenInput()
        else:
            self.fields["position"].initial = self.instance.step_index

    @cached_property
    def config_forms(self) -> dict[str, forms.Form]:
        stored_type, stored = self.instance.step_type, self.instance.config
        return {
            kind: cls(
                self.data if self.is_bound else None,
                prefix=f"{self.prefix}-{kind}",
                initial=initial_from(cls, stored) if kind == stored_type else {},
                organization_id=self.instance.organization_id,
                step_choices=self.step_choices,
            )
            for kind, cls in STEP_FORMS.items()
        }

    def _chosen(self) -> forms.Form | None:
        if not self.is_bound:
            return None
        return self.config_forms.get(self.data.get(self.add_prefix("step_type")) or "")

    def _config_changed(self) -> bool:
        chosen = self._chosen()
        if chosen is None:
            return False
        return self.instance._state.adding or chosen.has_changed() or "step_type" in self._own_changed()

    def _own_changed(self) -> list[str]:
        return forms.BaseForm.changed_data.func(self)  # type: ignore[attr-defined]

    @cached_property
    def changed_data(self) -> list[str]:  # type: ignore[override]
        names = self._own_changed()
        # "config" tells the admin's step saver that the stored config must be rewritten.
        return [*names, "config"] if self._config_changed() and "config" not in names else names

    def has_changed(self) -> bool:
        chosen = self._chosen()
        return bool(self._own_changed()) or (chosen is not None and chosen.has_changed())

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean()
        if cleaned.get("DELETE") or (not self.instance._state.adding and not self.has_changed()):
            return cleaned
        step_type = cleaned.get("step_type")
        if not step_type:
            return cleaned
        before = len(self.errors.get("settings", []))
        config = clean_nested(self, "settings", self.config_forms.get(step_type))
        if len(self.errors.get("settings", [])) > before or config is None:
            return cleaned
        try:
            cleaned["step_type"], cleaned["config"] = services.validate_step(
                step_type, config, organization_id=self.instance.organization_id
            )
        except services.AutomationInvalid as exc:
            self.add_error("settings", exc.message)
        return cleaned


class StepFormSet(forms.BaseInlineFormSet):
    """Passes the automation's step list to each row, for the condition steps' branch pickers."""

    def get_form_kwargs(self, index: int | None) -> dict[str, Any]:
        kwargs = super().get_form_kwargs(index)
        kwargs["step_choices"] = self.step_choices
        return kwargs

    #: Places offered for steps not saved yet, so a branch can point at a step added in the same save.
    NEW_PLACES = 6

    @cached_property
    def step_choices(self) -> list[tuple[str, str]]:
        """The saved steps, then the places of steps added below (new rows are appended in order)."""
        saved = (
            []
            if self.instance._state.adding
            else [
                (str(s.step_index), f"step {s.step_index} ({s.get_step_type_display().lower()})")
                for s in AutomationStep.objects.filter(automation=self.instance).order_by("step_index")
            ]
        )
        n = len(saved)
        return saved + [(str(i), f"step {i} (added below)") for i in range(n, n + self.NEW_PLACES)]
