"""Trigger settings (AUT-15): a form per trigger type; `cleaned_data["config"]` is the stored trigger config."""

from __future__ import annotations

import re
from typing import Any

from django import forms
from django.core.validators import RegexValidator

from automations.models import TriggerType
from owlat.contacts import WATCHED_FIELDS
from owlat.forms.conditions import topic_queryset
from owlat.forms.nested import styled

#: The events API's rule (AUT-30) for `eventName` — `^[a-zA-Z][a-zA-Z0-9_-]{0,99}$` on the whole string: the
#: characters here, the length by the field's `max_length` (so each mistake gets one message).
EVENT_NAME_RE = re.compile(r"\A[a-zA-Z][a-zA-Z0-9_-]*\Z")
EVENT_NAME_HELP = (
    "Starts with a letter; letters, digits, _ and - only; at most 100 characters (as /events requires)."
)
WATCHED_LABELS = {
    "email": "Email",
    "firstName": "First name",
    "lastName": "Last name",
    "timezone": "Time zone",
    "language": "Language",
}
assert set(WATCHED_LABELS) == set(WATCHED_FIELDS.values())


class TriggerForm(forms.Form):
    intro = ""

    def __init__(self, *args: Any, organization_id: Any = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.organization_id = organization_id
        styled(self)

    @staticmethod
    def initial_from_config(config: dict[str, Any]) -> dict[str, Any]:
        return {}

    def to_config(self) -> dict[str, Any] | None:
        return None

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean()
        if not self.errors:
            cleaned["config"] = self.to_config()
        return cleaned


class ContactCreatedTriggerForm(TriggerForm):
    intro = (
        "Starts for every new contact (API, sign-up forms, inbound mail, the admin). Imports do not start it."
    )


class ContactUpdatedTriggerForm(TriggerForm):
    intro = "Starts when this field of a contact changes to a new value."

    property_key = forms.ChoiceField(
        label="Changed field",
        error_messages={"required": "Choose the contact field whose change starts the automation."},
    )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        choices = [("", "— choose a field —"), *WATCHED_LABELS.items()]
        stored = self.initial.get("property_key")
        if stored and stored not in WATCHED_LABELS:
            choices.append((stored, f"{stored} (never changes: not a watched field)"))
        self.fields["property_key"].choices = choices
        self.fields["property_key"].widget.choices = choices

    @staticmethod
    def initial_from_config(config: dict[str, Any]) -> dict[str, Any]:
        return {"property_key": config.get("propertyKey")}

    def to_config(self) -> dict[str, Any]:
        return {"propertyKey": self.cleaned_data["property_key"]}


class EventReceivedTriggerForm(TriggerForm):
    intro = "Starts when your application posts this event for a contact (POST /api/v1/events)."

    event_name = forms.CharField(
        label="Event name",
        max_length=100,
        help_text=EVENT_NAME_HELP,
        validators=[
            RegexValidator(
                EVENT_NAME_RE,
                "Start with a letter and use only letters, digits, _ and - (as /events requires).",
            )
        ],
        error_messages={
            "required": "Enter the event name, e.g. signup.",
            "max_length": "Use at most 100 characters (the events API refuses longer names).",
        },
        widget=forms.TextInput(attrs={"placeholder": "signup"}),
    )

    @staticmethod
    def initial_from_config(config: dict[str, Any]) -> dict[str, Any]:
        return {"event_name": config.get("eventName")}

    def to_config(self) -> dict[str, Any]:
        return {"eventName": self.cleaned_data["event_name"]}


class TopicSubscribedTriggerForm(TriggerForm):
    intro = "Starts when a contact joins this topic (after double opt-in when the topic requires it)."

    topic = forms.ModelChoiceField(
        label="Topic",
        queryset=None,
        empty_label="— choose a topic —",
        error_messages={
            "required": "Choose the topic whose new members start the automation.",
            "invalid_choice": "Choose one of this organization's topics.",
        },
    )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["topic"].queryset = topic_queryset(self.organization_id)
        self.fields["topic"].widget.choices = self.fields["topic"].choices

    @staticmethod
    def initial_from_config(config: dict[str, Any]) -> dict[str, Any]:
        return {"topic": config.get("topicId")}

    def to_config(self) -> dict[str, Any]:
        return {"topicId": str(self.cleaned_data["topic"].pk)}


TRIGGER_FORMS: dict[str, type[TriggerForm]] = {
    TriggerType.CONTACT_CREATED: ContactCreatedTriggerForm,
    TriggerType.CONTACT_UPDATED: ContactUpdatedTriggerForm,
    TriggerType.EVENT_RECEIVED: EventReceivedTriggerForm,
    TriggerType.TOPIC_SUBSCRIBED: TopicSubscribedTriggerForm,
}
