"""Serializers of the templates API (API-26)."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from owlat.api.fields import InputSerializer, JSONValueField, StringField, TimestampField
from owlat.api.serializers import LANGUAGE_RE, LanguageField, SearchField
from templates.blocks import BlockError, document_clean
from templates.models import TemplateStatus, TemplateType

HTML_TRANSLATIONS_MESSAGE = "htmlTranslations must map languages to {htmlContent, subject} strings"


class TemplateSummarySerializer(serializers.Serializer):
    """A template in a list (without its content)."""

    id = serializers.CharField(read_only=True)
    name = serializers.CharField(read_only=True)
    subject = serializers.CharField(read_only=True)
    previewText = serializers.CharField(source="preview_text", read_only=True, allow_null=True)
    type = serializers.ChoiceField(choices=TemplateType.choices, read_only=True)
    status = serializers.ChoiceField(choices=TemplateStatus.choices, read_only=True)
    defaultLanguage = serializers.CharField(source="default_language", read_only=True)
    supportedLanguages = serializers.SerializerMethodField()
    createdAt = TimestampField(source="created_at", read_only=True)
    updatedAt = TimestampField(source="updated_at", read_only=True)

    def get_supportedLanguages(self, obj: Any) -> list[str]:
        return obj.supported_languages or []


CONTENT_HELP = (
    "The blocks the email is built from (schema version 1). When set, `htmlContent` and "
    "`htmlTranslations[lang].htmlContent` are rendered from it (MJML, CSS inlined) and values sent for them are "
    "ignored; `translations` then holds each language's block texts: {lang: {blockId: {field: text}}}. "
    "HTML as written goes in a `raw` block; null: a raw-HTML template (`htmlContent` as sent)."
)


class BlockContentField(JSONValueField):  # documented by templates.api.schema
    """A block document (templates.blocks), validated in full; errors name the path (`content.blocks[2].href`)."""

    def to_internal_value(self, data: Any) -> Any:
        data = super().to_internal_value(data)
        try:
            return document_clean(data, root=self.field_name)
        except BlockError as exc:
            inner = exc.field[len(self.field_name) :].lstrip(".")
            raise serializers.ValidationError({inner: [exc.message]} if inner else exc.message) from None


class TemplateSerializer(TemplateSummarySerializer):
    """A template with its content."""

    htmlContent = serializers.CharField(source="html_content", read_only=True, allow_null=True)
    plainTextContent = serializers.CharField(source="plain_text_content", read_only=True, allow_null=True)
    content = serializers.SerializerMethodField(help_text=CONTENT_HELP)
    translations = serializers.SerializerMethodField()
    htmlTranslations = serializers.SerializerMethodField()

    @extend_schema_field(BlockContentField())
    def get_content(self, obj: Any) -> Any:
        return obj.content

    def get_translations(self, obj: Any) -> dict[str, Any]:
        return obj.translations or {}

    def get_htmlTranslations(self, obj: Any) -> dict[str, dict[str, str]]:
        return obj.html_translations or {}


class LanguageCodeField(StringField):
    schema_pattern = LanguageField.schema_pattern  # documented as the API checks it

    def to_internal_value(self, data: Any) -> str:
        if not isinstance(data, str) or not LANGUAGE_RE.fullmatch(data):
            raise serializers.ValidationError(f"{self.field_name} must be a valid language code")
        return data


@extend_schema_field(
    {
        "type": "array",
        "items": {"type": "string", "pattern": f"^{LanguageField.schema_pattern}$", "example": "de"},
    }
)
class LanguageListField(serializers.Field):
    def to_internal_value(self, data: Any) -> list[str]:
        if not isinstance(data, list) or not all(
            isinstance(v, str) and LANGUAGE_RE.fullmatch(v) for v in data
        ):
            raise serializers.ValidationError(f"{self.field_name} must be an array of language codes")
        return data


@extend_schema_field(
    {
        "type": "object",
        "additionalProperties": {
            "type": "object",
            "properties": {"htmlContent": {"type": "string"}, "subject": {"type": "string"}},
            "additionalProperties": {"type": "string"},
        },
        "description": "Per language: `htmlContent` and `subject` (strings only).",
    }
)
class HtmlTranslationsField(JSONValueField):
    def to_internal_value(self, data: Any) -> dict[str, Any]:
        if not isinstance(data, dict) or not all(
            isinstance(v, dict) and all(isinstance(x, str) for x in v.values())  # as documented: strings only
            for v in data.values()
        ):
            raise serializers.ValidationError(HTML_TRANSLATIONS_MESSAGE)
        return super().to_internal_value(data)


class TypeField(serializers.ChoiceField):
    def to_internal_value(self, data: Any) -> str:
        if not isinstance(data, str) or data not in self.choices:
            raise serializers.ValidationError(f"type must be one of {', '.join(TemplateType.values)}")
        return data


class TemplateWriteSerializer(InputSerializer):
    """POST (name and subject required) and PUT/PATCH (partial) of a template."""

    read_only_keys = ("id", "status", "createdAt", "updatedAt")

    name = StringField(max_length=200, required=False)
    subject = StringField(max_length=998, required=False)
    previewText = StringField(source="preview_text", max_length=500, required=False)
    htmlContent = StringField(source="html_content", required=False)
    plainTextContent = StringField(source="plain_text_content", required=False)
    content = BlockContentField(required=False, help_text=CONTENT_HELP)
    type = TypeField(choices=TemplateType.choices, required=False)
    defaultLanguage = LanguageCodeField(source="default_language", required=False)
    supportedLanguages = LanguageListField(source="supported_languages", required=False)
    translations = JSONValueField(object_only=True, required=False)
    htmlTranslations = HtmlTranslationsField(source="html_translations", required=False)

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        required = ("name",) if self.partial else ("name", "subject")
        for key in required:
            if self.partial and key not in attrs:
                continue
            if not str(attrs.get(key) or "").strip():
                raise serializers.ValidationError({key: [f"{key} is required"]})
        return attrs


class TemplateCreateSerializer(TemplateWriteSerializer):
    """POST: as `TemplateWriteSerializer`, with `name` and `subject` required and not blank — for the document;
    the view validates with `TemplateWriteSerializer`, whose `validate` refuses them with the spec's messages."""

    name = StringField(max_length=200, schema_non_blank=True, trim_whitespace=True)
    subject = StringField(max_length=998, schema_non_blank=True, trim_whitespace=True)


class CommaSeparatedChoiceField(StringField):
    """`?status=draft,published`: a list of allowed values ("Invalid <name> filter" otherwise)."""

    def __init__(self, *, choices: list[str], **kwargs: Any) -> None:
        self.allowed = choices
        super().__init__(**kwargs)

    def to_internal_value(self, data: Any) -> list[str]:
        text = super().to_internal_value(data)
        values = [v.strip() for v in text.split(",") if v.strip()]
        if any(v not in self.allowed for v in values):
            raise serializers.ValidationError(f"Invalid {self.field_name} filter")
        return values


class TemplateListQuerySerializer(serializers.Serializer):
    status = CommaSeparatedChoiceField(
        choices=TemplateStatus.values, required=False, help_text="Comma-separated statuses."
    )
    type = CommaSeparatedChoiceField(
        choices=TemplateType.values, required=False, help_text="Comma-separated types."
    )
    search = SearchField(help_text="Part of the name.")
