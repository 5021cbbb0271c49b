"""Serializers of the transactional API (API-22, API-32)."""

from __future__ import annotations

import base64
import binascii
import re
from typing import Any

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from delivery.services import AttachmentInput
from owlat import outbound
from owlat.api.fields import (
    InputSerializer,
    StringField,
    TimestampField,
    check_object_limit,
    json_value_problem,
)
from owlat.api.serializers import EmailAddressField, LanguageField
from owlat.limits import TRANSACTIONAL_DATA

MAX_ATTACHMENTS = 10
MAX_ATTACHMENT_BYTES = 10 * 1024 * 1024
SCALAR_MESSAGE = "dataVariables values must be strings, numbers, booleans or null"
FILENAME_MAX, CONTENT_TYPE_MAX, URL_MAX = 255, 200, 2000


@extend_schema_field(
    {
        "type": "object",
        "additionalProperties": {"oneOf": [{"type": "string"}, {"type": "number"}, {"type": "boolean"}]},
        "description": "Values for the template's `{{variables}}`: strings, numbers, booleans or null; at "
        "most TRANSACTIONAL_DATA_MAX_KEYS keys (500) and TRANSACTIONAL_DATA_MAX_BYTES of JSON (256 KiB).",
    }
)
class DataVariablesField(serializers.Field):
    def to_internal_value(self, data: Any) -> dict[str, Any]:
        if not isinstance(data, dict):
            raise serializers.ValidationError("dataVariables must be an object")
        check_object_limit(data, field=self.field_name, limit=TRANSACTIONAL_DATA)
        for key, value in data.items():
            if value is not None and not isinstance(value, str | bool | int | float):
                raise serializers.ValidationError({key: [SCALAR_MESSAGE]})
        problem = json_value_problem(data, "dataVariables")
        if problem:
            raise serializers.ValidationError({problem[0].removeprefix("dataVariables."): [problem[1]]})
        return data


# One attachment as `_attachment` checks it: `filename` and exactly one of `content` (base64) or `url` (HTTPS).
ATTACHMENT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["filename"],
    "properties": {
        "filename": {
            "type": "string",
            "maxLength": FILENAME_MAX,
            "pattern": r"^[^/\\]*\S[^/\\]*$",
            "description": "Shown to the recipient; no path separators.",
        },
        "content": {
            "type": "string",
            "pattern": r"^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$",
            "description": "The file, base64-encoded.",
        },
        "url": {
            "type": "string",
            "maxLength": URL_MAX,
            "pattern": r"^[Hh][Tt][Tt][Pp][Ss]://[^/?#@\s]+",
            "description": "An HTTPS URL the file is fetched from (public hosts only).",
        },
        "contentType": {
            "type": "string",
            "maxLength": CONTENT_TYPE_MAX,
            "description": "MIME type, e.g. `application/pdf`.",
        },
    },
    "oneOf": [{"required": ["content"]}, {"required": ["url"]}],
}


@extend_schema_field({"type": "array", "maxItems": MAX_ATTACHMENTS, "items": ATTACHMENT_SCHEMA})
class AttachmentsField(serializers.Field):
    """Up to 10 attachments, 10 MB in total; errors name `attachments[i].<key>`."""

    def to_internal_value(self, data: Any) -> list[AttachmentInput]:
        if not isinstance(data, list):
            raise serializers.ValidationError("attachments must be an array")
        if len(data) > MAX_ATTACHMENTS:
            raise serializers.ValidationError("Maximum 10 attachments allowed")
        out: list[AttachmentInput] = []
        total = 0
        for index, item in enumerate(data):
            attachment, size = _attachment(item, f"attachments[{index}]")
            total += size
            if total > MAX_ATTACHMENT_BYTES:
                raise serializers.ValidationError("Total attachment size exceeds 10MB limit")
            out.append(attachment)
        return out


def _fail(path: str, message: str) -> serializers.ValidationError:
    # relative to `attachments`, so that the envelope's `data.field` is the full path
    return serializers.ValidationError({path.removeprefix("attachments"): [message]})


def _string_ok(value: str, path: str) -> None:
    problem = json_value_problem(value, path)
    if problem:
        raise _fail(path, problem[1])


def _attachment(item: Any, at: str) -> tuple[AttachmentInput, int]:
    filename = item.get("filename") if isinstance(item, dict) else None
    if not isinstance(filename, str) or not filename.strip():
        raise _fail(f"{at}.filename", f"{at}.filename is required and must be a string")
    if "/" in filename or "\\" in filename:
        raise _fail(f"{at}.filename", f"{at}.filename must not contain path separators")
    if len(filename) > FILENAME_MAX:
        raise _fail(f"{at}.filename", f"{at}.filename must be at most {FILENAME_MAX} characters")
    _string_ok(filename, f"{at}.filename")
    content, url = item.get("content"), item.get("url")
    if (content is None) == (url is None):
        raise _fail(at, f'{at} must have exactly one of "content" (base64) or "url"')
    content_type = item.get("contentType") if isinstance(item.get("contentType"), str) else None
    if content_type is not None:
        if len(content_type) > CONTENT_TYPE_MAX:
            raise _fail(
                f"{at}.contentType", f"{at}.contentType must be at most {CONTENT_TYPE_MAX} characters"
            )
        _string_ok(content_type, f"{at}.contentType")
    if url is not None:
        if not isinstance(url, str) or not url.lower().startswith("https://"):
            raise _fail(f"{at}.url", f"{at}.url must be an HTTPS URL")
        if len(url) > URL_MAX:
            raise _fail(f"{at}.url", f"{at}.url must be at most {URL_MAX} characters")
        _string_ok(url, f"{at}.url")
        try:
            outbound.check_url(url, schemes=("https",))
        except outbound.OutboundRefused as exc:
            raise _fail(f"{at}.url", f"{at}.url is not allowed: {exc}")
        return AttachmentInput(filename=filename, url=url, content_type=content_type), 0
    if not isinstance(content, str):
        raise _fail(f"{at}.content", f"{at}.content must be a base64-encoded string")
    try:
        data = base64.b64decode(re.sub(r"\s+", "", content), validate=True)
    except (binascii.Error, ValueError):
        raise _fail(f"{at}.content", f"{at}.content is not valid base64")
    return AttachmentInput(filename=filename, content=data, content_type=content_type), len(data)


class TransactionalSendSerializer(InputSerializer):
    """The recipient, the transactional email (`transactionalId` or `slug`) and its variables."""

    email = EmailAddressField(
        error_messages={"required": "email is required", "type": "email must be a string"},
        help_text="The recipient; a contact is created when none exists.",
    )
    transactionalId = StringField(required=False, help_text="The transactional email's id.")
    slug = StringField(required=False, help_text="The transactional email's slug (when no transactionalId).")
    dataVariables = DataVariablesField(required=False)
    language = LanguageField(required=False, help_text="Language of the content; default the contact's.")
    attachments = AttachmentsField(required=False)

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if not (attrs.get("transactionalId") or attrs.get("slug")):
            raise serializers.ValidationError("Either transactionalId or slug is required")
        return attrs


class TransactionalQueuedSerializer(serializers.Serializer):
    status = serializers.ChoiceField(choices=["queued"])
    email = serializers.CharField()
    transactionalEmailId = serializers.CharField(help_text="The send's id, for GET /transactional/{id}.")
    slug = serializers.CharField(allow_null=True)
    contactId = serializers.CharField()
    contactCreated = serializers.BooleanField()
    language = serializers.CharField(allow_null=True)


class SendProgressSerializer(serializers.Serializer):
    """A send row's delivery progress (`EmailSend`): when it was sent, delivered, opened, clicked, bounced,
    complained about or failed, and the provider's error. Transactional sends and campaign sends
    (`campaigns.api.serializers.CampaignSendSerializer`) answer it alike."""

    sentAt = TimestampField(source="sent_at", allow_null=True)
    deliveredAt = TimestampField(source="delivered_at", allow_null=True)
    openedAt = TimestampField(source="opened_at", allow_null=True)
    clickedAt = TimestampField(source="clicked_at", allow_null=True)
    bouncedAt = TimestampField(source="bounced_at", allow_null=True)
    bounceType = serializers.CharField(source="bounce_type", allow_null=True)
    complainedAt = TimestampField(source="complained_at", allow_null=True)
    failedAt = TimestampField(source="failed_at", allow_null=True)
    errorCode = serializers.CharField(source="error_code", allow_null=True)
    errorMessage = serializers.CharField(source="error_message", allow_null=True)


class TransactionalSendStatusSerializer(SendProgressSerializer):
    """A transactional send and its delivery progress."""

    id = serializers.CharField()
    email = serializers.CharField()
    slug = serializers.SerializerMethodField()
    status = serializers.CharField()
    language = serializers.CharField(allow_null=True)
    queuedAt = TimestampField(source="queued_at", allow_null=True)

    def get_slug(self, send: Any) -> str | None:
        return send.transactional_email.slug if send.transactional_email_id else None
