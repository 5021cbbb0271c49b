"""Serializers of the automations API: events (AUT-30, API-21), automations and steps (API-27), runs and
stats (API-28).

The request serializers check the shape of the body (types, required keys, read-only keys, values `jsonb`
can store); what a trigger or step config means is checked by `automations.services` (shared with the
admin), whose refusals name the field too.
"""

from __future__ import annotations

import copy
from typing import Any

from drf_spectacular.utils import PolymorphicProxySerializer, extend_schema_field
from rest_framework import serializers

from automations.api.variants import (
    STEP_TYPE_MESSAGE,
    TRIGGER_TYPE_MESSAGE,
    per_step_type,
    per_trigger_type,
    step_proxy,
    validated_kind,
)
from automations.models import AutomationStatus, RunStatus, StepRunStatus, StepType, TriggerType
from owlat.api.fields import (
    ChoiceListField,
    InputSerializer,
    JSONValueField,
    StrictBooleanField,
    StringField,
    TimestampField,
    check_object_limit,
    json_value_problem,
)
from owlat.api.serializers import EmailAddressField, SearchField
from owlat.event_names import EVENT_NAME_MESSAGE, EVENT_NAME_PATTERN, is_valid_event_name
from owlat.limits import EVENT_PROPERTIES

EVENT_PROPERTY_MESSAGE = "eventProperties values must be strings, numbers, booleans or null"
READ_ONLY_KEYS = (
    "id",
    "status",
    "stats",
    "consecutiveRunFailures",
    "activatedAt",
    "pausedAt",
    "createdAt",
    "updatedAt",
    "stepCount",
)


# --- fields whose meaning `automations.services` checks -------------------------------------------------------


@extend_schema_field(serializers.ChoiceField(choices=TriggerType.choices))
class TriggerTypeField(JSONValueField):
    pass


@extend_schema_field(
    {
        "type": "object",
        "additionalProperties": True,
        "nullable": True,
        "description": "Depends on `triggerType`: `propertyKey` for contact_updated, `eventName` for "
        "event_received, `topicId` for topic_subscribed; contact_created takes none.",
    }
)
class TriggerConfigField(JSONValueField):
    pass


@extend_schema_field(serializers.ChoiceField(choices=StepType.choices))
class StepTypeField(JSONValueField):
    pass


@extend_schema_field(
    {
        "type": "object",
        "additionalProperties": True,
        "description": "Depends on `stepType` (see the step kinds' configs): `emailTemplateId` (email), "
        "`duration` and `unit` (delay), `condition` and branch targets (condition).",
    }
)
class StepConfigField(JSONValueField):
    pass


@extend_schema_field({"type": "integer", "minimum": 0})
class StepIndexField(JSONValueField):
    pass


class StepInputSerializer(serializers.Serializer):
    """A step of a new automation."""


STEP_INPUTS = per_step_type(StepInputSerializer, "StepInput")


@extend_schema_field(step_proxy("StepInput", STEP_INPUTS, many=True))
class StepsField(JSONValueField):
    """The steps of a new automation, each checked by the serializer of its `stepType`."""

    def to_internal_value(self, data: Any) -> Any:
        if not isinstance(data, list):
            raise serializers.ValidationError("steps must be an array")
        data = super().to_internal_value(data)
        for index, step in enumerate(data):
            try:
                validated_kind(STEP_INPUTS, "stepType", STEP_TYPE_MESSAGE, step)
            except serializers.ValidationError as exc:
                raise serializers.ValidationError({index: exc.detail}) from None
        return data


@extend_schema_field({"type": "array", "items": {"type": "string", "format": "uuid"}})
class StepIdsField(JSONValueField):
    pass


UNSUBSCRIBE_FOOTER_HELP = (
    "Whether the automation's email carries a footer with the unsubscribe link (default true; it is left out "
    "when the template already contains {{unsubscribeUrl}}). Turn off only for purely transactional flows; the "
    "List-Unsubscribe header is sent either way."
)
TRACK_ENGAGEMENT_HELP = (
    "Whether opens and clicks of the automation's email are tracked, as for campaigns (default false)."
)


# --- requests ------------------------------------------------------------------------------------------------


class _AutomationCreateFields(InputSerializer):
    """A new automation (a draft), optionally with its steps."""

    read_only_keys = READ_ONLY_KEYS

    name = StringField(
        schema_non_blank=True,
        error_messages={"required": "name is required"},
        help_text="At most 200 characters.",
    )
    description = StringField(required=False)
    steps = StepsField(required=False)
    unsubscribeFooter = StrictBooleanField(required=False, help_text=UNSUBSCRIBE_FOOTER_HELP)
    trackEngagement = StrictBooleanField(required=False, help_text=TRACK_ENGAGEMENT_HELP)


AUTOMATION_CREATES = per_trigger_type(_AutomationCreateFields, "AutomationCreate")


class AutomationCreateSerializer(_AutomationCreateFields):
    """Checks the keys every kind shares, then the body with the serializer of its `triggerType`."""

    triggerType = TriggerTypeField(error_messages={"required": "triggerType is required"})
    triggerConfig = TriggerConfigField(required=False)

    def to_internal_value(self, data: Any) -> Any:
        super().to_internal_value(data)
        return validated_kind(AUTOMATION_CREATES, "triggerType", TRIGGER_TYPE_MESSAGE, data)


#: the document of `POST /automations`: the body per trigger type
AUTOMATION_CREATE = PolymorphicProxySerializer(
    component_name="AutomationCreate", serializers=AUTOMATION_CREATES, resource_type_field_name="triggerType"
)


class AutomationUpdateSerializer(InputSerializer):
    """Name and description in any state; trigger type and config only in draft."""

    read_only_keys = (*READ_ONLY_KEYS, "steps")

    name = StringField(required=False)
    description = StringField(required=False)
    triggerType = TriggerTypeField(required=False)
    triggerConfig = TriggerConfigField(required=False)
    unsubscribeFooter = StrictBooleanField(required=False, help_text=UNSUBSCRIBE_FOOTER_HELP)
    trackEngagement = StrictBooleanField(required=False, help_text=TRACK_ENGAGEMENT_HELP)


class _StepCreateFields(InputSerializer):
    """A step added to a draft."""

    read_only_keys = ("id",)

    stepIndex = StepIndexField(required=False, help_text="Insert at this position; default: append.")


STEP_CREATES = per_step_type(_StepCreateFields, "StepCreate")


class StepCreateSerializer(_StepCreateFields):
    """Checks the keys every kind shares, then the body with the serializer of its `stepType`."""

    stepType = StepTypeField(error_messages={"required": "stepType is required"})
    config = StepConfigField(required=False)  # required by the kind's variant unless it has no settings

    def to_internal_value(self, data: Any) -> Any:
        attrs = super().to_internal_value(data)
        validated_kind(STEP_CREATES, "stepType", STEP_TYPE_MESSAGE, data)
        return attrs


#: the document of `POST /automations/{id}/steps`: the body per step type
STEP_CREATE = step_proxy("StepCreate", STEP_CREATES)


class StepUpdateSerializer(InputSerializer):
    read_only_keys = ("id",)

    stepType = StepTypeField(required=False)
    config = StepConfigField(required=False)


class StepReorderSerializer(InputSerializer):
    stepIds = StepIdsField(
        error_messages={"required": "stepIds is required"}, help_text="Every step id, in the new order."
    )


@extend_schema_field(
    {
        "type": "object",
        "additionalProperties": {
            "nullable": True,
            "oneOf": [{"type": "string"}, {"type": "number"}, {"type": "boolean"}],
        },
        "description": "Data about the event: strings, numbers, booleans or null; at most "
        "EVENT_PROPERTIES_MAX_KEYS keys (200) and EVENT_PROPERTIES_MAX_BYTES of JSON (64 KiB).",
    }
)
class EventPropertiesField(serializers.Field):
    def to_internal_value(self, data: Any) -> dict[str, Any]:
        if not isinstance(data, dict):
            raise serializers.ValidationError("eventProperties must be an object")
        check_object_limit(data, field=self.field_name, limit=EVENT_PROPERTIES)
        for key, value in data.items():
            if value is not None and not isinstance(value, str | int | float | bool):
                raise serializers.ValidationError({key: [EVENT_PROPERTY_MESSAGE]})
        problem = json_value_problem(data, "eventProperties")
        if problem:
            raise serializers.ValidationError({problem[0].removeprefix("eventProperties."): [problem[1]]})
        return data


class EventNameField(StringField):
    """An event name in full (owlat.event_names); blank is refused with the same message."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("allow_blank", False)
        super().__init__(**kwargs)
        self.error_messages["blank"] = EVENT_NAME_MESSAGE

    def to_internal_value(self, data: Any) -> str:
        value = super().to_internal_value(data)
        if not is_valid_event_name(value):
            raise serializers.ValidationError(EVENT_NAME_MESSAGE)
        return value


class EventSerializer(InputSerializer):
    """An event for the contact with this email."""

    reuse_fields = True  # the events API's hot path; plain fields only

    email = EmailAddressField(
        error_messages={"required": "email is required", "type": "email must be a string"}
    )
    eventName = EventNameField(
        schema_pattern=EVENT_NAME_PATTERN.pattern,
        schema_non_blank=True,
        error_messages={"required": "eventName is required"},
        help_text="Starts with a letter; letters, digits, `_` and `-`; at most 100 characters.",
    )
    eventProperties = EventPropertiesField(required=False)
    createContactIfNotExists = StrictBooleanField(
        required=False, default=False, help_text="Create the contact when no contact has this email."
    )


# --- list queries --------------------------------------------------------------------------------------------


class AutomationListQuerySerializer(serializers.Serializer):
    status = ChoiceListField(
        choices=AutomationStatus.values, required=False, help_text="Comma-separated: draft, active, paused."
    )
    triggerType = ChoiceListField(
        choices=TriggerType.values, required=False, help_text="Comma-separated trigger types."
    )
    search = SearchField(help_text="Part of the name.")


class RunListQuerySerializer(serializers.Serializer):
    status = ChoiceListField(
        choices=RunStatus.values, required=False, help_text="Comma-separated: running, completed, cancelled."
    )
    contactId = StringField(required=False, help_text="Only this contact's runs.")


# --- responses -----------------------------------------------------------------------------------------------


class StepSerializer(serializers.Serializer):
    """A step of an automation."""

    id = serializers.CharField()
    stepIndex = serializers.IntegerField(source="step_index")
    stepType = serializers.ChoiceField(source="step_type", choices=StepType.choices)
    config = StepConfigField()


#: the document of a step in an answer: per step type
STEPS = step_proxy("Step", per_step_type(StepSerializer, "Step"), many=True)


class AutomationStatsSerializer(serializers.Serializer):
    entered = serializers.IntegerField(source="stats_entered")
    active = serializers.IntegerField(source="stats_active")
    completed = serializers.IntegerField(source="stats_completed")
    cancelled = serializers.IntegerField(source="stats_cancelled")

    def to_representation(self, instance: Any) -> Any:
        from automations.counters import counters_overlay

        instance = copy.copy(instance)  # the caller's object keeps the stored values
        counters_overlay([instance])  # stored + pending deltas, once per object
        return super().to_representation(instance)


class AutomationSummarySerializer(serializers.Serializer):
    """An automation in a list (without its steps)."""

    id = serializers.CharField()
    name = serializers.CharField()
    description = serializers.CharField(allow_null=True)
    triggerType = serializers.ChoiceField(source="trigger_type", choices=TriggerType.choices)
    triggerConfig = TriggerConfigField(source="trigger_config")
    status = serializers.ChoiceField(choices=AutomationStatus.choices)
    stats = AutomationStatsSerializer(source="*")
    consecutiveRunFailures = serializers.IntegerField(source="consecutive_run_failures")
    unsubscribeFooter = serializers.BooleanField(
        source="unsubscribe_footer", help_text=UNSUBSCRIBE_FOOTER_HELP
    )
    trackEngagement = serializers.BooleanField(source="track_engagement", help_text=TRACK_ENGAGEMENT_HELP)
    activatedAt = TimestampField(source="activated_at", allow_null=True)
    pausedAt = TimestampField(source="paused_at", allow_null=True)
    createdAt = TimestampField(source="created_at")
    updatedAt = TimestampField(source="updated_at")
    stepCount = serializers.SerializerMethodField()

    def get_stepCount(self, automation: Any) -> int:
        count = getattr(automation, "step_count", None)
        return automation.steps.count() if count is None else count


class AutomationSerializer(AutomationSummarySerializer):
    """An automation with its steps, in order."""

    stepCount = None
    steps = serializers.SerializerMethodField()

    @extend_schema_field(STEPS)
    def get_steps(self, automation: Any) -> list[dict[str, Any]]:
        return StepSerializer(automation.steps.order_by("step_index"), many=True).data


class RunSerializer(serializers.Serializer):
    id = serializers.CharField()
    automationId = serializers.CharField(source="automation_id")
    contactId = serializers.CharField(source="contact_id")
    status = serializers.ChoiceField(choices=RunStatus.choices)
    currentStepIndex = serializers.IntegerField(source="current_step_index")
    stepsExecuted = serializers.IntegerField(source="steps_executed")
    triggeredBy = serializers.CharField(source="triggered_by")
    triggerData = JSONValueField(source="trigger_data", help_text="What started the run (event, changes).")
    startedAt = TimestampField(source="started_at")
    completedAt = TimestampField(source="completed_at", allow_null=True)
    nextStepAt = TimestampField(source="next_step_at", allow_null=True)


class StepRunSerializer(serializers.Serializer):
    id = serializers.CharField()
    stepId = serializers.CharField(source="step_id", allow_null=True)
    stepIndex = serializers.IntegerField(source="step_index")
    stepType = serializers.ChoiceField(source="step_type", choices=StepType.choices)
    status = serializers.ChoiceField(choices=StepRunStatus.choices)
    scheduledAt = TimestampField(source="scheduled_at", allow_null=True)
    startedAt = TimestampField(source="started_at", allow_null=True)
    completedAt = TimestampField(source="completed_at", allow_null=True)
    delayUntil = TimestampField(source="delay_until", allow_null=True)
    emailSendId = serializers.CharField(source="email_send_id", allow_null=True)
    errorMessage = serializers.CharField(source="error_message", allow_null=True)
    retryCount = serializers.IntegerField(source="retry_count")
    note = serializers.CharField(allow_null=True)


class FunnelStepSerializer(serializers.Serializer):
    stepId = serializers.CharField()
    stepIndex = serializers.IntegerField()
    stepType = serializers.CharField()
    pending = serializers.IntegerField()
    executing = serializers.IntegerField()
    completed = serializers.IntegerField()
    failed = serializers.IntegerField()
    skipped = serializers.IntegerField()


class AutomationCountersSerializer(serializers.Serializer):
    """Run counters and the per-step funnel."""

    entered = serializers.IntegerField()
    active = serializers.IntegerField()
    completed = serializers.IntegerField()
    cancelled = serializers.IntegerField()
    statsUpdatedAt = serializers.CharField(allow_null=True)
    funnel = FunnelStepSerializer(many=True)


class EventRecordedSerializer(serializers.Serializer):
    eventId = serializers.CharField()
    contactId = serializers.CharField()
    eventName = serializers.CharField()
    triggeredAutomations = serializers.IntegerField(help_text="How many automations this event started.")
    contactCreated = serializers.BooleanField()
