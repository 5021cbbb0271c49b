"""Request serializers of the sign-up form writes (POST /forms, PUT/PATCH/DELETE /forms/{id}).

Each key's document says exactly what the API accepts (the fuzzer holds it to that): strings are typed and
bounded, colours and URLs carry patterns that Django's own validators accept in full, lists are bounded. What a
schema cannot say — that a topic or contact property belongs to the organization, that a topic, field or language
is given once — is checked by `owlat.signup.writes`, which also runs the admin's forms over the result.
"""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from owlat.api.fields import InputSerializer, StrictBooleanField, StringField
from owlat.forms.languages import LANGUAGES
from owlat.models import SignupFieldKind
from owlat.signup.forms import MAX_ORIGINS

TEXT_MAX = 2000
MAX_TOPICS = 20
MAX_FIELDS = 20
MAX_TEXTS = 50

_LABEL = r"[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?"
_HOST = rf"{_LABEL}(?:\.{_LABEL})*"
#: a subset of what Django's URLValidator accepts: http(s), a lower-case host with a top-level label, a plain path
URL_PATTERN = rf"https?://{_HOST}\.[a-z]{{2,63}}(?:/[A-Za-z0-9._~%/-]*)?(?:\?[A-Za-z0-9._~%=&-]*)?"
#: an origin: scheme, host and port only
ORIGIN_PATTERN = rf"https?://{_HOST}(?::[0-9]{{1,5}})?/?"
COLOUR_PATTERN = r"#[0-9a-fA-F]{6}"
PROPERTY_KEY_REQUIRED = "propertyKey is required with kind property"


class PatternField(StringField):
    """A string matching `schema_pattern` in full (blank allowed when `allow_blank`)."""

    def to_internal_value(self, data: Any) -> str:
        import re

        value = super().to_internal_value(data)
        if value and not re.fullmatch(self.schema_pattern or "", value):
            raise serializers.ValidationError(
                self.error_messages.get("pattern", f"{self.field_name} is malformed")
            )
        return value


def _text(max_length: int = TEXT_MAX, *, required: bool = False, **kwargs: Any) -> StringField:
    """A text the visitor reads; `required` ones are refused blank (after trimming, as the admin's form trims)."""
    return StringField(
        max_length=max_length,
        required=False,
        trim_whitespace=True,
        allow_blank=not required,
        **kwargs,
    )


def _url(**kwargs: Any) -> PatternField:
    return PatternField(
        max_length=200,
        required=False,
        schema_pattern=URL_PATTERN,
        error_messages={"pattern": "Enter a full web address, e.g. https://www.example.com/thanks."},
        **kwargs,
    )


class FormTopicInput(InputSerializer):
    topicId = serializers.UUIDField(help_text="A topic of the organization.")
    preselected = StrictBooleanField(required=False, help_text="Ticked when the page opens (default true).")


class FormFieldInput(InputSerializer):
    kind = serializers.ChoiceField(choices=SignupFieldKind.values)
    propertyKey = StringField(
        max_length=100,
        required=False,
        help_text="With kind `property`: the key of a contact property of the organization (required then).",
    )
    label = _text(100, help_text="Empty: a label by kind.")
    required = StrictBooleanField(required=False)

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if attrs["kind"] == SignupFieldKind.PROPERTY and not attrs.get("propertyKey"):
            raise serializers.ValidationError({"propertyKey": [PROPERTY_KEY_REQUIRED]})
        return attrs


class FormTextInput(InputSerializer):
    language = serializers.ChoiceField(choices=[code for code, _name in LANGUAGES])
    title = _text(200)
    description = _text()
    consentText = _text()
    submitLabel = _text(60)
    successMessage = _text()
    pendingMessage = _text()
    confirmedMessage = _text()
    successRedirectUrl = _url()
    pendingRedirectUrl = _url()


class SignupFormWriteSerializer(InputSerializer):
    """POST: name and topics required, every other setting has the admin's default; `fields` and `texts` as
    given."""

    read_only_keys = ("id", "publicUrl", "createdAt", "updatedAt")

    name = StringField(
        max_length=200,
        trim_whitespace=True,
        allow_blank=False,
        error_messages={"required": "name is required", "blank": "name is required"},
    )
    isActive = StrictBooleanField(required=False)
    requireDoubleOptIn = StrictBooleanField(required=False)
    title = _text(200, required=True)
    description = _text()
    consentText = _text()
    submitLabel = _text(60, required=True)
    brandColor = PatternField(
        max_length=7,
        required=False,
        allow_blank=False,
        schema_pattern=COLOUR_PATTERN,
        error_messages={"pattern": "brandColor must be a colour as #rrggbb, e.g. #4f46e5"},
    )
    pendingMessage = _text(required=True)
    successMessage = _text(required=True)
    confirmedMessage = _text(required=True)
    pendingRedirectUrl = _url()
    successRedirectUrl = _url()
    confirmedRedirectUrl = _url()
    allowedOrigins = serializers.ListField(
        child=PatternField(
            max_length=300,
            allow_blank=False,
            schema_pattern=ORIGIN_PATTERN,
            error_messages={"pattern": "an origin is the scheme and host only, e.g. https://www.example.com"},
        ),
        max_length=MAX_ORIGINS,
        required=False,
        help_text="The websites that may embed the form.",
    )
    topics = serializers.ListField(child=FormTopicInput(), min_length=1, max_length=MAX_TOPICS)
    fields = serializers.ListField(child=FormFieldInput(), max_length=MAX_FIELDS, required=False)
    texts = serializers.ListField(child=FormTextInput(), max_length=MAX_TEXTS, required=False)


class SignupFormUpdateSerializer(SignupFormWriteSerializer):
    """PUT/PATCH: every key optional (only the keys sent change); a list sent is whole, each item complete —
    validated without DRF's `partial`, which would also make the items' own keys optional."""

    name = StringField(
        max_length=200,
        trim_whitespace=True,
        allow_blank=False,
        required=False,
        error_messages={"blank": "name is required"},
    )
    topics = serializers.ListField(
        child=FormTopicInput(), min_length=1, max_length=MAX_TOPICS, required=False
    )
