"""Serializers per kind: a step's `config` per `stepType` (AUT-31 … AUT-34) and a trigger's `triggerConfig` per
`triggerType` (AUT-15), with the request bodies that carry them documented as `oneOf` the kinds, discriminated by
`stepType` / `triggerType` (drf-spectacular's `PolymorphicProxySerializer`).

The same serializers validate the requests: `validated_kind` picks the serializer of the kind sent. A kind's
config serializer declares its fields for the document and checks the value with the kind's own parser
(`automations.steps.validate_step_config`, `automations.services.validate_trigger`: the rules the admin and the
walker use), so there is one rule and its messages are the spec's. Whether a referenced template or topic exists
in the organization is `automations.services`' check (API-24: 400 "… not found").
"""

from __future__ import annotations

from typing import Any, ClassVar

from drf_spectacular.extensions import OpenApiSerializerFieldExtension
from drf_spectacular.utils import PolymorphicProxySerializer, extend_schema_field
from rest_framework import serializers

from automations.models import StepType, TriggerType
from automations.steps import StepConfigError, validate_step_config
from automations.steps.delay import UNIT_MS
from owlat.api.fields import JSONValueField
from owlat.api.serializers import condition_schema
from owlat.event_names import EVENT_NAME_PATTERN

STEP_TYPE_MESSAGE = f"stepType must be one of {', '.join(StepType.values)}"
TRIGGER_TYPE_MESSAGE = f"triggerType must be one of {', '.join(TriggerType.values)}"


def _camel(value: str) -> str:
    return "".join(part.capitalize() for part in value.split("_"))


def validated_kind(
    variants: dict[str, type[serializers.Serializer]], key: str, message: str, data: Any
) -> Any:
    """`data` validated by the serializer of its kind (`data[key]`); an unknown kind is a 400 naming `key`."""
    kind = data.get(key) if isinstance(data, dict) else None
    variant = variants.get(kind) if isinstance(kind, str) else None
    if variant is None:
        raise serializers.ValidationError({key: [message]})
    serializer = variant(data=data)
    serializer.is_valid(raise_exception=True)
    return serializer.validated_data


# --- step configs ---------------------------------------------------------------------------------------------


class StepConfigSerializer(serializers.Serializer):
    """A step kind's config: declared fields for the document, checked and made canonical by the kind's parser."""

    step_type: ClassVar[str]

    def to_internal_value(self, data: Any) -> dict[str, Any]:
        try:
            return validate_step_config(self.step_type, data)
        except StepConfigError as exc:
            raise serializers.ValidationError({exc.field: [exc.message]} if exc.field else [exc.message])

    def to_representation(self, instance: Any) -> Any:
        return instance  # stored canonical


@extend_schema_field({"type": "number", "minimum": 0, "exclusiveMinimum": True, "example": 2})
class PositiveNumberField(serializers.FloatField):
    pass


@extend_schema_field(condition_schema(aliases=True))
class ConditionField(JSONValueField):
    pass


class BranchIndexField(serializers.IntegerField):
    """A condition's branch target: stored as a step index or null; a request may send anything else, which
    means null (AUT-33)."""


class BranchIndexFieldExtension(OpenApiSerializerFieldExtension):
    target_class = BranchIndexField

    def map_serializer_field(self, auto_schema: Any, direction: Any) -> Any:
        if direction == "request":
            return {
                "nullable": True,
                "description": f"{self.target.help_text} Anything but an integer ≥ 0 (or absent): the next step.",
            }
        return {"type": "integer", "minimum": 0, "nullable": True, "description": self.target.help_text}


class EmailStepConfigSerializer(StepConfigSerializer):
    """Sends an email built from a template."""

    step_type = StepType.EMAIL

    emailTemplateId = serializers.UUIDField(
        help_text="The template to send (a template of the organization)."
    )
    subjectOverride = serializers.CharField(
        required=False, allow_null=True, allow_blank=True, help_text="Replaces the template's subject."
    )


class DelayStepConfigSerializer(StepConfigSerializer):
    """Waits before the next step."""

    step_type = StepType.DELAY

    duration = PositiveNumberField(help_text="How long, in `unit`s (greater than 0).")
    unit = serializers.ChoiceField(choices=list(UNIT_MS))


class ConditionStepConfigSerializer(StepConfigSerializer):
    """Checks one condition against the contact and goes on at the branch's step."""

    step_type = StepType.CONDITION

    condition = ConditionField(
        help_text="The condition (a contact property, email activity or topic membership)."
    )
    yesBranchStepIndex = BranchIndexField(
        required=False, allow_null=True, help_text="The step to go on at when the condition holds."
    )
    noBranchStepIndex = BranchIndexField(
        required=False, allow_null=True, help_text="The step to go on at when it does not."
    )


class EndStepConfigSerializer(StepConfigSerializer):
    """Ends the run here (no settings): a branch stops where it is put instead of going on at the next step."""

    step_type = StepType.END


STEP_CONFIGS: dict[str, type[StepConfigSerializer]] = {
    StepType.EMAIL.value: EmailStepConfigSerializer,
    StepType.DELAY.value: DelayStepConfigSerializer,
    StepType.CONDITION.value: ConditionStepConfigSerializer,
    StepType.END.value: EndStepConfigSerializer,
}


def _config_field(config: type[StepConfigSerializer]) -> StepConfigSerializer:
    """A kind with settings requires `config`; a kind without (End) takes none, or an empty object."""
    if config().fields:
        return config(error_messages={"required": "config is required"})
    return config(required=False, allow_null=True, default=dict)


def per_step_type(base: type[serializers.Serializer], name: str) -> dict[str, type[serializers.Serializer]]:
    """`{step type: base with that `stepType` and its config serializer}` (`name`: the component's base name)."""
    return {
        kind: type(
            f"{_camel(kind)}{name}Serializer",
            (base,),
            {
                "__doc__": f"{base.__doc__ or ''} A step of type `{kind}`: {config.__doc__}".strip(),
                "stepType": serializers.ChoiceField(choices=[kind]),
                "config": _config_field(config),
            },
        )
        for kind, config in STEP_CONFIGS.items()
    }


def step_proxy(component_name: str, variants: dict[str, type], **kwargs: Any) -> PolymorphicProxySerializer:
    return PolymorphicProxySerializer(
        component_name=component_name, serializers=variants, resource_type_field_name="stepType", **kwargs
    )


# --- trigger configs ------------------------------------------------------------------------------------------


class TriggerConfigField(JSONValueField):
    """A trigger kind's config (an object, or null: none yet — activation needs it, AUT-09), checked by
    `automations.services.validate_trigger`."""

    trigger_type: ClassVar[str]

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("required", False)
        kwargs.setdefault("allow_null", True)
        super().__init__(**kwargs)

    def to_internal_value(self, data: Any) -> Any:
        from automations.services import AutomationInvalid, validate_trigger

        data = super().to_internal_value(data)
        try:
            validate_trigger(self.trigger_type, data)
        except AutomationInvalid as exc:
            key = (exc.field or "").removeprefix("triggerConfig").lstrip(".")
            raise serializers.ValidationError({key: [exc.message]} if key else exc.message) from None
        return data


def _trigger_config(kind: str, description: str, **properties: dict[str, Any]) -> type[TriggerConfigField]:
    schema = {
        "type": "object",
        "properties": {name: {**prop, "nullable": True} for name, prop in properties.items()},
        "additionalProperties": True,
        "nullable": True,
        "description": description,
    }
    return extend_schema_field(schema)(
        type(f"{_camel(kind)}TriggerConfigField", (TriggerConfigField,), {"trigger_type": kind})
    )


TRIGGER_CONFIGS: dict[str, type[TriggerConfigField]] = {
    TriggerType.CONTACT_CREATED.value: _trigger_config(
        TriggerType.CONTACT_CREATED.value, "Takes no configuration."
    ),
    TriggerType.CONTACT_UPDATED.value: _trigger_config(
        TriggerType.CONTACT_UPDATED.value,
        "`propertyKey`: the contact field or property whose change starts a run.",
        propertyKey={"type": "string", "minLength": 1},
    ),
    TriggerType.EVENT_RECEIVED.value: _trigger_config(
        TriggerType.EVENT_RECEIVED.value,
        "`eventName`: the event that starts a run (exact, case-sensitive).",
        eventName={"type": "string", "pattern": f"^{EVENT_NAME_PATTERN.pattern}$"},
    ),
    TriggerType.TOPIC_SUBSCRIBED.value: _trigger_config(
        TriggerType.TOPIC_SUBSCRIBED.value,
        "`topicId`: the topic whose new members start a run (a topic of the organization).",
        topicId={"type": "string", "format": "uuid"},
    ),
}


def per_trigger_type(
    base: type[serializers.Serializer], name: str
) -> dict[str, type[serializers.Serializer]]:
    """`{trigger type: base with that `triggerType` and its `triggerConfig`}`."""
    return {
        kind: type(
            f"{name}{_camel(kind)}Serializer",
            (base,),
            {
                "__doc__": f"{base.__doc__ or ''} Triggered by `{kind}`.".strip(),
                "triggerType": serializers.ChoiceField(choices=[kind]),
                "triggerConfig": config(),
            },
        )
        for kind, config in TRIGGER_CONFIGS.items()
    }
