"""Serializers of the kernel's resources: contacts (API-13…18), topics and membership (API-19/20/25),
segments (API-25). Wire names are camelCase declared fields; messages are the spec's."""

from __future__ import annotations

import re
import zoneinfo
from functools import lru_cache
from typing import Any

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from owlat.api.fields import (
    InputSerializer,
    JSONValueField,
    StrictBooleanField,
    StrictIntegerField,
    StringField,
    TimestampField,
    check_object_limit,
    json_value_problem,
)
from owlat.conditions.language import (
    ACTIVITY_FIELDS,
    ACTIVITY_OPERATORS,
    CAMPAIGN_ACTIVITIES,
    LOGICS,
    MAX_LINK_LENGTH,
    OPERATOR_ALIASES,
    PROPERTY_OPERATORS,
    TOPIC_OPERATORS,
)
from owlat.ids import UUIDLike
from owlat.limits import CONTACT_PROPERTIES

NAME_MAX = 200
LANGUAGE_RE = re.compile(r"^[a-z]{2}(-[a-z]{2,3})?$", re.IGNORECASE)
LANGUAGE_MESSAGE = "language must be a valid language code (e.g., 'en', 'de', 'fr', 'en-US')"
TIMEZONE_MESSAGE = "timezone must be a valid IANA time zone (e.g., 'Europe/Berlin')"


@lru_cache(maxsize=1)
def _timezones() -> frozenset[str]:
    return frozenset(zoneinfo.available_timezones())


# --- shared fields ------------------------------------------------------------------------------------------


class EmailAddressField(StringField):
    """An email address (`owlat.contacts.is_valid_email`); "Invalid email format" otherwise."""

    default_error_messages = {"invalid_email": "Invalid email format"}

    def run_validation(self, data: Any = serializers.empty) -> Any:
        # DRF lets a blank string skip `to_internal_value`: a required "" would create a contact without an
        # address (an optional one keeps meaning "clear", e.g. a campaign's replyTo)
        if self.required and isinstance(data, str) and not data.strip():
            raise serializers.ValidationError(self.error_messages["required"])
        return super().run_validation(data)

    def to_internal_value(self, data: Any) -> str:
        from owlat.contacts import is_valid_email

        if not isinstance(data, str):
            raise serializers.ValidationError(self.error_messages.get("type", "Invalid email format"))
        value = super().to_internal_value(data)
        if not is_valid_email(value):
            self.fail("invalid_email")
        return value


class LanguageField(StringField):
    schema_pattern = "[a-zA-Z]{2}(-[a-zA-Z]{2,3})?"  # LANGUAGE_RE

    def to_internal_value(self, data: Any) -> str:
        value = super().to_internal_value(data)
        if not LANGUAGE_RE.fullmatch(value):
            raise serializers.ValidationError(LANGUAGE_MESSAGE)
        return value


class TimezoneField(StringField):
    """An IANA time zone name this server knows (documented as their enum, owlat.api.schema)."""

    def to_internal_value(self, data: Any) -> str:
        value = super().to_internal_value(data)
        if value not in _timezones():
            raise serializers.ValidationError(
                TIMEZONE_MESSAGE.replace("timezone", self.field_name or "timezone", 1)
            )
        return value


@extend_schema_field(
    {
        "type": "object",
        "additionalProperties": {
            "nullable": True,
            "oneOf": [{"type": "string"}, {"type": "number"}, {"type": "boolean"}],
        },
        "nullable": True,
        "description": "Custom properties: keys of 1–100 characters, values strings, numbers, booleans or null; "
        "at most CONTACT_PROPERTIES_MAX_KEYS keys (200) and CONTACT_PROPERTIES_MAX_BYTES of JSON (64 KiB).",
    }
)
class ContactPropertiesField(serializers.Field):
    """Custom properties: an object of scalar values; errors name `properties.<key>` (D-14)."""

    def to_internal_value(self, data: Any) -> dict[str, Any]:
        if not isinstance(data, dict):
            raise serializers.ValidationError("properties must be an object")
        check_object_limit(data, field=self.field_name or "properties", limit=CONTACT_PROPERTIES)
        for key, value in data.items():
            if not key or len(key) > 100:
                raise serializers.ValidationError({key: ["properties keys must be 1 to 100 characters"]})
            if value is not None and not isinstance(value, str | int | float | bool):
                raise serializers.ValidationError(
                    {key: ["properties values must be strings, numbers, booleans or null"]}
                )
        problem = json_value_problem(data, "properties")
        if problem:
            raise serializers.ValidationError({problem[0].removeprefix("properties."): [problem[1]]})
        return data

    def to_representation(self, value: Any) -> Any:
        return value


def _name_field(**kwargs: Any) -> StringField:
    return StringField(
        max_length=NAME_MAX,
        trim_whitespace=True,
        allow_blank=False,
        error_messages={"required": "name is required", "blank": "name is required"},
        **kwargs,
    )


# --- contacts -----------------------------------------------------------------------------------------------


class ContactSerializer(serializers.Serializer):
    """A contact."""

    # API-13: exactly the seven keys the SDKs know

    id = serializers.CharField(read_only=True)
    email = serializers.CharField(read_only=True, allow_null=True)
    firstName = serializers.CharField(source="first_name", read_only=True, allow_null=True)
    lastName = serializers.CharField(source="last_name", read_only=True, allow_null=True)
    source = serializers.CharField(read_only=True)  # type: ignore[assignment]  # the wire field `source`
    createdAt = TimestampField(source="created_at", read_only=True)
    updatedAt = TimestampField(source="updated_at", read_only=True)


class _ContactExtrasSerializer(InputSerializer):
    firstName = StringField(source="first_name", max_length=NAME_MAX, required=False)
    lastName = StringField(source="last_name", max_length=NAME_MAX, required=False)
    language = LanguageField(required=False)
    timezone = TimezoneField(required=False)
    properties = ContactPropertiesField(required=False)


class ContactCreateSerializer(_ContactExtrasSerializer):
    email = EmailAddressField(
        error_messages={"required": "Email is required", "type": "Email must be a string"},
        help_text="The contact's email address (stored lower-cased).",
    )

    def get_fields(self) -> dict[str, Any]:
        fields = super().get_fields()
        return {"email": fields.pop("email"), **fields}


class ContactUpdateSerializer(_ContactExtrasSerializer):
    email = EmailAddressField(required=False, error_messages={"type": "email must be a string"})

    def get_fields(self) -> dict[str, Any]:
        fields = super().get_fields()
        return {"email": fields.pop("email"), **fields}


# --- topics -------------------------------------------------------------------------------------------------


class TopicSerializer(serializers.Serializer):
    id = serializers.CharField(read_only=True)
    name = serializers.CharField(read_only=True)
    description = serializers.CharField(read_only=True, allow_null=True)
    displayOrder = serializers.IntegerField(source="display_order", read_only=True, allow_null=True)
    isDefault = serializers.BooleanField(source="is_default", read_only=True)
    requireDoubleOptIn = serializers.BooleanField(source="require_double_opt_in", read_only=True)
    memberCount = serializers.IntegerField(source="cached_member_count", read_only=True)
    createdAt = TimestampField(source="created_at", read_only=True)
    updatedAt = TimestampField(source="updated_at", read_only=True)


class TopicWriteSerializer(InputSerializer):
    """POST (name required) and PUT/PATCH (partial) of a topic."""

    read_only_keys = ("memberCount",)

    name = _name_field()
    description = StringField(required=False)
    displayOrder = StrictIntegerField(source="display_order", required=False)
    isDefault = StrictBooleanField(source="is_default", required=False)
    requireDoubleOptIn = StrictBooleanField(source="require_double_opt_in", required=False)


class TopicMemberSerializer(serializers.Serializer):
    contactId = serializers.CharField(source="contact_id", read_only=True)
    email = serializers.CharField(source="contact.email", read_only=True)
    addedAt = TimestampField(source="added_at", read_only=True)
    pendingDoiConfirmation = serializers.BooleanField(source="pending_doi_confirmation", read_only=True)
    doiStatus = serializers.CharField(source="contact.doi_status", read_only=True)


class TopicSubscribeSerializer(InputSerializer):
    """The contact to subscribe: `email` or `contactId`."""

    email = EmailAddressField(required=False, help_text="Either email or contactId is required.")
    contactId = serializers.UUIDField(required=False, error_messages={"invalid": "Invalid contactId format"})

    def to_internal_value(self, data: Any) -> Any:
        if isinstance(data, dict) and "contactId" in data and not isinstance(data["contactId"], str):
            raise serializers.ValidationError({"contactId": ["Invalid contactId format"]})
        return super().to_internal_value(data)

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if "email" not in attrs and "contactId" not in attrs:
            raise serializers.ValidationError("Either email or contactId is required")
        return attrs


class TopicSubscribedSerializer(serializers.Serializer):
    success = serializers.BooleanField()
    contactId = serializers.CharField()
    topicId = serializers.CharField()
    doiStatus = serializers.CharField(
        help_text="`pending` while a double opt-in confirmation is outstanding."
    )


class TopicUnsubscribedSerializer(serializers.Serializer):
    success = serializers.BooleanField()
    removed = serializers.BooleanField(help_text="False when the contact was not a member.")


# --- segments -----------------------------------------------------------------------------------------------


def _condition_schema(kind: str, required: tuple[str, ...], **properties: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "object",
        "required": ["kind", *required, "operator"],
        "properties": {"kind": {"type": "string", "enum": [kind]}, **properties},
    }


def _enum(values: tuple[str, ...]) -> dict[str, Any]:
    return {"type": "string", "enum": list(values)}


def condition_schema(*, aliases: bool = False) -> dict[str, Any]:
    """One condition of AUT-34 as `owlat.conditions` parses it: `oneOf` the three kinds (canonical operators; with
    `aliases`, also the editor's aliases a contact-property condition takes); `topicId` must exist (API-24)."""
    property_operators = (*PROPERTY_OPERATORS, *OPERATOR_ALIASES) if aliases else PROPERTY_OPERATORS
    return {
        "oneOf": [
            _condition_schema(
                "contact_property",
                ("field",),
                field={
                    "type": "string",
                    "description": "email, firstName, lastName, source or a property key.",
                },
                operator=_enum(property_operators),
                value={
                    "nullable": True,
                    "anyOf": [{"type": "string"}, {"type": "number"}, {"type": "boolean"}],
                },
            ),
            _condition_schema(
                "email_activity",
                ("field",),
                field=_enum(ACTIVITY_FIELDS),
                operator=_enum(ACTIVITY_OPERATORS),
            ),
            _condition_schema(
                "topic_membership",
                ("topicId",),
                topicId={"type": "string", "format": "uuid"},
                operator=_enum(TOPIC_OPERATORS),
            ),
            _condition_schema(
                "signup_form",
                ("formId",),
                formId={"type": "string", "format": "uuid"},
                operator=_enum(TOPIC_OPERATORS),
            ),
            _condition_schema(
                "campaign_activity",
                ("campaignId", "field"),
                campaignId={"type": "string", "format": "uuid"},
                field=_enum(CAMPAIGN_ACTIVITIES),
                operator=_enum(ACTIVITY_OPERATORS),
            ),
            _condition_schema(
                "campaign_link",
                ("campaignId", "url"),
                campaignId={"type": "string", "format": "uuid"},
                url={
                    "type": "string",
                    "minLength": 1,
                    "maxLength": MAX_LINK_LENGTH,
                    "description": "The link's address exactly as in the campaign.",
                },
                operator=_enum(ACTIVITY_OPERATORS),
            ),
        ]
    }


# AUT-34 as `owlat.conditions.parse_filters` reads it (canonical operators; `topicId` must exist, API-24)
SEGMENT_FILTERS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["logic", "conditions"],
    "properties": {
        "logic": _enum(LOGICS),
        "conditions": {"type": "array", "items": condition_schema()},
    },
    "description": "Segment conditions (see the segment condition reference).",
}


@extend_schema_field(SEGMENT_FILTERS_SCHEMA)
class SegmentFiltersField(JSONValueField):
    """Segment filters, checked by `owlat.conditions.parse_filters`; errors name `filters.<path>`."""

    def to_internal_value(self, data: Any) -> dict[str, Any]:
        from owlat.conditions import ConditionError, TopicCondition, parse_filters

        try:
            parsed = parse_filters(data)
        except ConditionError as exc:
            raise serializers.ValidationError({exc.field: [exc.message]} if exc.field else exc.message)
        super().to_internal_value(data)
        organization_id = self.context["organization_id"]
        for index, condition in enumerate(parsed.conditions):
            if isinstance(condition, TopicCondition) and not _topic_exists(
                organization_id, condition.topic_id
            ):
                raise serializers.ValidationError({f"conditions[{index}].topicId": ["Topic not found"]})
        return parsed.to_dict()

    def to_representation(self, value: Any) -> dict[str, Any]:  # type: ignore[override]  # an object
        filters = value if isinstance(value, dict) else {}
        return {"logic": filters.get("logic", "AND"), "conditions": filters.get("conditions", [])}


def _topic_exists(organization_id: UUIDLike, topic_id: object) -> bool:
    from owlat.api.base import parse_uuid
    from owlat.models import Topic

    pk = parse_uuid(topic_id)
    return pk is not None and Topic.objects.filter(organization_id=organization_id, pk=pk).exists()


class SegmentSerializer(serializers.Serializer):
    id = serializers.CharField(read_only=True)
    name = serializers.CharField(read_only=True)
    description = serializers.CharField(read_only=True, allow_null=True)
    filters = SegmentFiltersField(read_only=True)
    cachedCount = serializers.IntegerField(source="cached_count", read_only=True)
    createdAt = TimestampField(source="created_at", read_only=True)
    updatedAt = TimestampField(source="updated_at", read_only=True)


class SegmentWriteSerializer(InputSerializer):
    """POST (name required) and PUT/PATCH (partial) of a segment; needs `context={"organization_id": …}`."""

    read_only_keys = ("cachedCount",)

    name = _name_field()
    description = StringField(required=False)
    filters = SegmentFiltersField(required=False)


# --- list queries -------------------------------------------------------------------------------------------


class SearchField(StringField):
    """`?search=`: trimmed, blank means none; given once (a repeated parameter is refused, naming it)."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("required", False)
        kwargs.setdefault("trim_whitespace", True)
        super().__init__(**kwargs)

    def get_value(self, dictionary: Any) -> Any:
        if hasattr(dictionary, "getlist") and len(dictionary.getlist(self.field_name)) > 1:
            return dictionary.getlist(self.field_name)
        return super().get_value(dictionary)

    def to_internal_value(self, data: Any) -> str:
        if isinstance(data, list):
            raise serializers.ValidationError(f"{self.field_name} must be given once")
        return super().to_internal_value(data)


class SearchQuerySerializer(serializers.Serializer):
    """`?search=` (blank means none)."""

    search = SearchField()
