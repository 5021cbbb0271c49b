"""The condition builder (AUT-34, DOM-09): forms that clean into the canonical condition JSON.

`ConditionForm` edits one condition — a contact property compared with a value, email activity (opened /
clicked), topic membership or the sign-up form a contact joined through — with the spec's operators.
`FiltersForm` edits a segment's filter set: AND/OR and a formset of conditions. Both clean through
`owlat.conditions.canonicalize_*`, so only what the evaluator accepts is ever stored, with exactly the keys stored
today (`kind`, `field`, `operator`, `value`, `topicId`, `formId`; `logic`, `conditions`).
"""

from __future__ import annotations

import math
from decimal import Decimal, InvalidOperation
from typing import Any

from django import forms

from owlat.conditions import (
    ACTIVITY_FIELDS,
    BUILTIN_FIELDS,
    OPERATOR_ALIASES,
    ConditionError,
    canonicalize_condition,
)
from owlat.forms.nested import styled

KIND_CHOICES = [
    ("contact_property", "Contact property"),
    ("email_activity", "Email activity"),
    ("topic_membership", "Topic membership"),
    ("signup_form", "Sign-up form"),
]
PROPERTY_OPERATOR_CHOICES = [
    ("equals", "equals"),
    ("not_equals", "does not equal"),
    ("contains", "contains"),
    ("not_contains", "does not contain"),
    ("gt", "is greater than"),
    ("lt", "is less than"),
    ("gte", "is at least"),
    ("lte", "is at most"),
    ("is_empty", "is empty"),
    ("not_empty", "is not empty"),
    ("is_true", "is true"),
    ("is_false", "is false"),
]
ACTIVITY_CHOICES = [("opened", "opened an email"), ("clicked", "clicked a link")]
ACTIVITY_OPERATOR_CHOICES = [("is_true", "has"), ("is_false", "has not")]
TOPIC_OPERATOR_CHOICES = [("equals", "is a member of"), ("not_equals", "is not a member of")]
FORM_OPERATOR_CHOICES = [("equals", "joined through"), ("not_equals", "did not join through")]
NUMERIC_OPERATORS = {"gt", "lt", "gte", "lte"}
NO_VALUE_OPERATORS = {"is_empty", "not_empty", "is_true", "is_false"}
BUILTIN_LABELS = {"email": "Email", "firstName": "First name", "lastName": "Last name", "source": "Source"}
assert set(BUILTIN_LABELS) == set(BUILTIN_FIELDS)
assert {c for c, _ in ACTIVITY_CHOICES} == set(ACTIVITY_FIELDS)


def property_choices(organization_id: Any, *, keep: str | None = None) -> list[tuple[str, Any]]:
    """Built-in contact fields and the organization's custom properties (DOM-07), grouped for the select."""
    from owlat.models import ContactProperty

    custom = [
        (p.key, f"{p.label or p.key} ({p.key})")
        for p in ContactProperty.objects.filter(organization_id=organization_id).order_by("key")
    ]
    builtin = list(BUILTIN_LABELS.items())
    known = {k for k, _ in builtin} | {k for k, _ in custom}
    choices: list[tuple[str, Any]] = [("", "— choose a property —"), ("Contact fields", builtin)]
    if custom:
        choices.append(("Custom properties", custom))
    if keep and keep not in known:
        choices.append(("Other", [(keep, f"{keep} (not a defined property)")]))
    return choices


def topic_queryset(organization_id: Any):
    from owlat.models import Topic

    return Topic.objects.filter(organization_id=organization_id).order_by("name")


def form_queryset(organization_id: Any):
    from owlat.models import SignupForm

    return SignupForm.objects.filter(organization_id=organization_id).order_by("name")


def _kind_attrs(kind: str) -> dict[str, str]:
    return {"data-kinds": kind}


def _typed_value(text: str) -> int | float:
    """A numeric comparison value as a JSON number (integral values without `.0`)."""
    try:
        number = Decimal(text.strip())
    except InvalidOperation:
        raise forms.ValidationError("Enter a number to compare with, such as 10 or 2.5.") from None
    if not number.is_finite():
        raise forms.ValidationError("Enter a number to compare with, such as 10 or 2.5.")
    if number == number.to_integral_value():
        return int(number)
    value = float(number)
    if not math.isfinite(value):
        raise forms.ValidationError("Enter a number to compare with, such as 10 or 2.5.")
    return value


class ConditionForm(forms.Form):
    """One condition of the AUT-34 language; `cleaned_data["config"]` is its canonical JSON."""

    layout = "sentence"

    kind = forms.ChoiceField(label="Condition", choices=KIND_CHOICES, initial="contact_property")
    field = forms.ChoiceField(
        label="Property",
        required=False,
        widget=forms.Select(attrs=_kind_attrs("contact_property")),
        error_messages={
            "invalid_choice": "Choose one of the listed properties (define new ones under Contact properties)."
        },
    )
    operator = forms.ChoiceField(
        label="Operator",
        choices=PROPERTY_OPERATOR_CHOICES,
        initial="equals",
        required=False,
        widget=forms.Select(attrs={**_kind_attrs("contact_property"), "data-operator": "1"}),
    )
    value = forms.CharField(
        label="Value",
        required=False,
        max_length=1000,
        widget=forms.TextInput(attrs={**_kind_attrs("contact_property"), "data-value": "1"}),
        help_text="Text compares without regard to case; numbers for greater/less than.",
    )
    activity_operator = forms.ChoiceField(
        label="Contact",
        choices=ACTIVITY_OPERATOR_CHOICES,
        initial="is_true",
        required=False,
        widget=forms.Select(attrs=_kind_attrs("email_activity")),
    )
    activity = forms.ChoiceField(
        label="Activity",
        choices=ACTIVITY_CHOICES,
        initial="opened",
        required=False,
        widget=forms.Select(attrs=_kind_attrs("email_activity")),
    )
    topic_operator = forms.ChoiceField(
        label="Contact",
        choices=TOPIC_OPERATOR_CHOICES,
        initial="equals",
        required=False,
        widget=forms.Select(attrs=_kind_attrs("topic_membership")),
    )
    topic = forms.ModelChoiceField(
        label="Topic",
        queryset=None,
        required=False,
        empty_label="— choose a topic —",
        widget=forms.Select(attrs=_kind_attrs("topic_membership")),
        error_messages={"invalid_choice": "Choose one of this organization's topics."},
    )
    form_operator = forms.ChoiceField(
        label="Contact",
        choices=FORM_OPERATOR_CHOICES,
        initial="equals",
        required=False,
        widget=forms.Select(attrs=_kind_attrs("signup_form")),
    )
    signup_form = forms.ModelChoiceField(
        label="Form",
        queryset=None,
        required=False,
        empty_label="— choose a sign-up form —",
        widget=forms.Select(attrs=_kind_attrs("signup_form")),
        help_text="Contacts whose sign-up through this form was confirmed (or needed no confirmation).",
        error_messages={"invalid_choice": "Choose one of this organization's sign-up forms."},
    )

    def __init__(self, *args: Any, organization_id: Any = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.organization_id = organization_id
        keep = self.initial.get("field") if isinstance(self.initial.get("field"), str) else None
        self.fields["field"].choices = property_choices(organization_id, keep=keep)
        self.fields["topic"].queryset = topic_queryset(organization_id)
        self.fields["signup_form"].queryset = form_queryset(organization_id)
        styled(self)

    @staticmethod
    def initial_from_config(condition: dict[str, Any]) -> dict[str, Any]:
        """Form initial data from a stored condition."""
        kind = condition.get("kind")
        operator = OPERATOR_ALIASES.get(condition.get("operator"), condition.get("operator"))
        if kind == "email_activity":
            return {"kind": kind, "activity": condition.get("field"), "activity_operator": operator}
        if kind == "topic_membership":
            return {"kind": kind, "topic": condition.get("topicId"), "topic_operator": operator}
        if kind == "signup_form":
            return {"kind": kind, "signup_form": condition.get("formId"), "form_operator": operator}
        value = condition.get("value")
        if isinstance(value, bool):
            value = "true" if value else "false"
        return {
            "kind": "contact_property",
            "field": condition.get("field"),
            "operator": operator,
            "value": "" if value is None else str(value),
        }

    def _required(self, name: str, message: str) -> Any:
        value = self.cleaned_data.get(name)
        if value in (None, "") and name not in self.errors:  # one message per mistake
            self.add_error(name, message)
        return value

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean()
        kind = cleaned.get("kind")
        condition: dict[str, Any]
        if kind == "email_activity":
            condition = {
                "kind": kind,
                "field": self._required("activity", "Choose opened or clicked."),
                "operator": self._required("activity_operator", "Choose has or has not."),
            }
        elif kind == "topic_membership":
            topic = self._required("topic", "Choose a topic.")
            condition = {
                "kind": kind,
                "topicId": str(topic.pk) if topic is not None else "",
                "operator": self._required("topic_operator", "Choose is or is not a member."),
            }
        elif kind == "signup_form":
            form = self._required("signup_form", "Choose a sign-up form.")
            condition = {
                "kind": kind,
                "formId": str(form.pk) if form is not None else "",
                "operator": self._required("form_operator", "Choose joined or did not join."),
            }
        elif kind == "contact_property":
            field = self._required("field", "Choose the contact property to test.")
            operator = self._required("operator", "Choose an operator.")
            condition = {"kind": kind, "field": field, "operator": operator}
            text = cleaned.get("value") or ""
            if operator in NUMERIC_OPERATORS:
                if not text.strip():
                    self.add_error("value", "Enter a number to compare with, such as 10 or 2.5.")
                else:
                    try:
                        condition["value"] = _typed_value(text)
                    except forms.ValidationError as exc:
                        self.add_error("value", exc)
            elif operator and operator not in NO_VALUE_OPERATORS:
                if not text:
                    self.add_error("value", "Enter the value to compare with (or choose “is empty”).")
                condition["value"] = text
        else:
            return cleaned  # the kind field already has its error
        if not self.errors:
            try:
                cleaned["config"] = canonicalize_condition(condition)
            except ConditionError as exc:  # pragma: no cover - the fields above only offer valid values
                self.add_error(None, exc.message)
        return cleaned


class BaseConditionFormSet(forms.BaseFormSet):
    def __init__(self, *args: Any, organization_id: Any = None, **kwargs: Any) -> None:
        self.organization_id = organization_id
        super().__init__(*args, **kwargs)

    def get_form_kwargs(self, index: int | None) -> dict[str, Any]:
        return {**super().get_form_kwargs(index), "organization_id": self.organization_id}

    def add_fields(self, form: forms.Form, index: int | None) -> None:
        super().add_fields(form, index)
        if "DELETE" in form.fields:
            form.fields["DELETE"].label = "Remove"

    def conditions(self) -> list[dict[str, Any]]:
        """The cleaned conditions, in order, without deleted and untouched blank rows."""
        return [
            f.cleaned_data["config"]
            for f in self.forms
            if f.cleaned_data and not f.cleaned_data.get("DELETE") and "config" in f.cleaned_data
        ]


ConditionFormSet = forms.formset_factory(
    ConditionForm, formset=BaseConditionFormSet, extra=1, can_delete=True
)


class FiltersForm(forms.Form):
    """A segment's filter set (DOM-09): all/any of the conditions; `config` is `{"logic", "conditions"}`."""

    nested_template = "owlat/forms/filters.html"

    logic = forms.ChoiceField(
        label="Match",
        choices=[("AND", "all conditions (AND)"), ("OR", "any condition (OR)")],
        initial="AND",
    )

    def __init__(self, *args: Any, organization_id: Any = None, **kwargs: Any) -> None:
        conditions = kwargs.pop("conditions_initial", None) or []
        super().__init__(*args, **kwargs)
        self.organization_id = organization_id
        self.conditions = ConditionFormSet(
            self.data if self.is_bound else None,
            prefix=f"{self.prefix}-conditions" if self.prefix else "conditions",
            initial=conditions,
            organization_id=organization_id,
        )
        styled(self)

    @staticmethod
    def initial_from_config(filters: dict[str, Any]) -> dict[str, Any]:
        return {"logic": filters.get("logic") or "AND"}

    @staticmethod
    def conditions_from_config(filters: Any) -> list[dict[str, Any]]:
        conditions = filters.get("conditions") if isinstance(filters, dict) else None
        return [ConditionForm.initial_from_config(c) for c in conditions or [] if isinstance(c, dict)]

    def has_changed(self) -> bool:
        return super().has_changed() or self.conditions.has_changed()

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean()
        if not self.conditions.is_valid():
            # Each condition's errors, named "Condition 2 · Value: …" so the operator finds the row.
            for i, form in enumerate(self.conditions.forms, start=1):
                for name, messages in form.errors.items():
                    label = form.fields[name].label if name in form.fields else ""
                    where = f"Condition {i}" + (f" · {label}" if label else "")
                    for message in messages:
                        self.add_error(None, f"{where}: {message}")
            for message in self.conditions.non_form_errors():
                self.add_error(None, message)
        elif cleaned.get("logic"):
            cleaned["config"] = {"logic": cleaned["logic"], "conditions": self.conditions.conditions()}
        return cleaned
