"""Wire format of the inbox (API-33, API-34): DRF serializers with declared camelCase fields. Request
serializers validate (400 naming the field); response serializers render a message and its agent actions."""

from __future__ import annotations

import base64
import binascii
import json
import re
from typing import Any

from django.conf import settings
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from inbox.models import ActionStatus, InboundMessage, ProcessingStatus, StepKind
from inbox.receive import AUTH_RESULTS
from owlat.api.fields import (
    ChoiceListField,
    JSONValueField,
    QuerySerializer,
    StrictBooleanField,
    StringField,
    TimestampField,
    json_value_problem,
)

# --- requests ------------------------------------------------------------------------------------------------


@extend_schema_field(
    {
        "oneOf": [
            {"type": "string", "pattern": r"\S"},
            {"type": "array", "items": {"type": "string", "pattern": r"\S"}, "minItems": 1},
        ],
        "description": "One address or a list of addresses (none blank).",
    }
)
class FlexibleToField(serializers.Field):
    """`to`: a string or an array of strings."""

    def to_internal_value(self, data: Any) -> list[str]:
        if isinstance(data, str):
            data = [data]
        if not isinstance(data, list) or not data or not all(isinstance(x, str) and x.strip() for x in data):
            raise serializers.ValidationError("to must be a string or a non-empty array of strings")
        problem = json_value_problem(data, "to")  # stored as jsonb: no NUL, no lone surrogate
        if problem:
            raise serializers.ValidationError(problem[1])
        return [x.strip() for x in data]

    def to_representation(self, value: Any) -> Any:
        return value


@extend_schema_field(OpenApiTypes.BYTE)
class Base64Field(serializers.Field):
    """Bytes sent as a base64 string (whitespace ignored)."""

    default_error_messages = {"invalid": "Must be a base64-encoded string."}

    def to_internal_value(self, data: Any) -> bytes:
        if not isinstance(data, str):
            self.fail("invalid")
        try:
            return base64.b64decode(re.sub(r"\s+", "", data), validate=True)
        except (binascii.Error, ValueError):
            self.fail("invalid")
        raise AssertionError("unreachable")

    def to_representation(self, value: Any) -> str:
        return base64.b64encode(value).decode()


class InboundAttachmentSerializer(serializers.Serializer):
    """An attachment: its metadata, and its content when sent. Content is stored and judged as on every other
    intake (dangerous types quarantine the message; over `INBOX_ATTACHMENT_MAX_BYTES`, or past
    `INBOX_ATTACHMENT_MAX_COUNT`, only the metadata is kept); the whole message stays within
    `INBOX_MAX_MESSAGE_BYTES`."""

    # JSON strings only (DRF's CharField took `0` as "0")
    filename = StringField(allow_blank=True, max_length=500, trim_whitespace=True)
    contentType = StringField(allow_blank=False, max_length=200, trim_whitespace=True)
    size = serializers.IntegerField(
        min_value=0, required=False, help_text="Bytes (0 when not given); with `content`, its decoded length."
    )
    content = Base64Field(required=False, help_text="The file, base64-encoded; stored for reviewers.")

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        attrs["size"] = len(attrs["content"]) if "content" in attrs else attrs.get("size", 0)
        return attrs


class AuthenticationSerializer(serializers.Serializer):
    """SPF, DKIM and DMARC results; an absent result counts as unauthenticated (never auto-sent)."""

    spf = serializers.ChoiceField(choices=AUTH_RESULTS, required=False)
    dkim = serializers.ChoiceField(choices=AUTH_RESULTS, required=False)
    dmarc = serializers.ChoiceField(choices=AUTH_RESULTS, required=False)


def _with_from(
    fields: dict[str, serializers.Field], field: serializers.Field, *, after: str
) -> dict[str, serializers.Field]:
    """`from` is a Python keyword: declared through `get_fields`, after `after` as in API-33."""
    items = list(fields.items())
    index = [name for name, _ in items].index(after) + 1
    return dict([*items[:index], ("from", field), *items[index:]])


#: the parts of an ingested message whose size counts toward INBOX_MAX_MESSAGE_BYTES
SIZED_PARTS = ("textBody", "htmlBody", "subject", "headers", "attachments")


def check_message_size(data: Any) -> None:
    """400 naming the largest part and the limit when the message is over `INBOX_MAX_MESSAGE_BYTES`; measured
    before any field (or header) is validated."""
    from owlat.api.errors import invalid_input
    from owlat.limits import json_size

    if not isinstance(data, dict):
        return
    sizes = {
        name: (len(value.encode("utf-8", "surrogatepass")) if isinstance(value, str) else json_size(value))
        for name in SIZED_PARTS
        if (value := data.get(name)) is not None
    }
    total, limit = sum(sizes.values()), settings.INBOX_MAX_MESSAGE_BYTES
    if total > limit:
        largest = max(sizes, key=sizes.__getitem__)
        message = f"The message is too large: {total} bytes (at most {limit} bytes)"
        raise invalid_input(message, field=largest, data={"limit": limit, "unit": "bytes"})


class MessageIngestSerializer(serializers.Serializer):
    """An inbound email, for integrations without an MTA webhook."""

    messageId = StringField(
        max_length=998,
        trim_whitespace=True,
        allow_blank=False,
        help_text="The Message-ID header; a repeat is not re-run.",
    )
    to = FlexibleToField()
    subject = StringField(required=False, trim_whitespace=True, max_length=998, default="")
    textBody = StringField(required=False)
    htmlBody = StringField(required=False)
    inReplyTo = StringField(required=False, trim_whitespace=True, max_length=998)
    references = StringField(required=False, trim_whitespace=True)
    headers = serializers.DictField(child=StringField(), required=False)
    attachments = InboundAttachmentSerializer(many=True, required=False)
    receivedAt = TimestampField(required=False, help_text="Default: now.")
    authentication = AuthenticationSerializer(required=False)

    def to_internal_value(self, data: Any) -> Any:
        check_message_size(data)
        return super().to_internal_value(data)

    def get_fields(self) -> dict[str, serializers.Field]:
        return _with_from(
            super().get_fields(),
            StringField(
                max_length=500,
                trim_whitespace=True,
                allow_blank=False,
                schema_format="email",  # the document names the plain form; `Name <addr>` is accepted too
                help_text="`addr` or `Name <addr>`.",
            ),
            after="messageId",
        )


class DraftEditSerializer(serializers.Serializer):
    draftResponse = StringField(allow_blank=False, help_text="The reply's new text.")
    draftSubject = StringField(required=False, trim_whitespace=True, max_length=998)


class ApproveSerializer(serializers.Serializer):
    """Optionally an edit, applied first."""

    draftResponse = StringField(required=False, allow_blank=False)
    draftSubject = StringField(required=False, trim_whitespace=True, max_length=998)
    keepCustomerLinks = StrictBooleanField(
        required=False,
        default=False,
        help_text="Keep links the customer sent that the draft repeats (else they are removed when sent).",
    )


class RejectSerializer(serializers.Serializer):
    reason = StringField(required=False, trim_whitespace=True, max_length=1000)


class MessageListQuerySerializer(QuerySerializer):
    processingStatus = ChoiceListField(
        choices=ProcessingStatus.values,
        required=False,
        help_text="Comma-separated (or repeated) processing statuses.",
    )
    threadId = serializers.UUIDField(required=False)
    contactId = serializers.UUIDField(required=False)
    receivedAfter = TimestampField(required=False, help_text="Received at or after this time.")
    receivedBefore = TimestampField(required=False, help_text="Received before this time.")


# --- responses -----------------------------------------------------------------------------------------------


class DraftSerializer(serializers.Serializer):
    """The agent's (or a reviewer's) reply."""

    response = serializers.CharField(source="draft_response")
    subject = serializers.CharField(source="draft_subject", allow_null=True)
    options = JSONValueField(source="draft_options", allow_null=True, help_text="Alternative drafts.")
    confidenceScore = serializers.FloatField(source="confidence_score", allow_null=True)
    quality = JSONValueField(source="draft_quality", allow_null=True)
    isEdited = serializers.BooleanField(source="is_draft_edited")
    savedAt = TimestampField(source="draft_saved_at", allow_null=True)


class PendingAutoSendSerializer(serializers.Serializer):
    sendAt = serializers.CharField(help_text="When the approved reply goes out unless undone.")


class MessageSerializer(serializers.Serializer):
    """An inbound message and what the agent made of it."""

    id = serializers.CharField()
    messageId = serializers.CharField(source="message_id")
    to = serializers.ListField(child=serializers.CharField())
    subject = serializers.CharField()
    threadId = serializers.CharField(source="thread_id", allow_null=True)
    contactId = serializers.CharField(source="contact_id", allow_null=True)
    processingStatus = serializers.ChoiceField(source="processing_status", choices=ProcessingStatus.choices)
    receivedAt = TimestampField(source="received_at", allow_null=True)
    processedAt = TimestampField(source="processed_at", allow_null=True)
    securityFlags = JSONValueField(source="security_flags", allow_null=True)
    classification = JSONValueField(allow_null=True)
    agentDecision = JSONValueField(source="agent_decision", allow_null=True)
    draft = serializers.SerializerMethodField()
    pendingAutoSend = serializers.SerializerMethodField()
    approvalSource = serializers.CharField(source="approval_source", allow_null=True)
    isAutoSendBlocked = serializers.BooleanField(source="is_auto_send_blocked")
    errorMessage = serializers.CharField(source="error_message", allow_null=True)

    def get_fields(self) -> dict[str, serializers.Field]:
        return _with_from(super().get_fields(), serializers.SerializerMethodField(), after="messageId")

    def get_from(self, message: InboundMessage) -> str:
        """`Name <addr>` or `addr`."""
        return f"{message.from_name} <{message.from_email}>" if message.from_name else message.from_email

    @extend_schema_field(DraftSerializer(allow_null=True))
    def get_draft(self, message: InboundMessage) -> dict[str, Any] | None:
        return None if message.draft_response is None else DraftSerializer(message).data

    @extend_schema_field(PendingAutoSendSerializer(allow_null=True))
    def get_pendingAutoSend(self, message: InboundMessage) -> dict[str, Any] | None:
        pending = message.pending_auto_send
        return {"sendAt": pending.get("send_at")} if pending else None


class MessageAuthenticationSerializer(serializers.Serializer):
    spf = serializers.CharField(source="spf_result", allow_null=True)
    dkim = serializers.CharField(source="dkim_result", allow_null=True)
    dmarc = serializers.CharField(source="dmarc_result", allow_null=True)


class MessageDetailSerializer(MessageSerializer):
    """A message with its bodies, headers, attachments, authentication and the draft's revisions."""

    textBody = serializers.CharField(source="text_body", allow_null=True)
    htmlBody = serializers.CharField(source="html_body", allow_null=True)
    headers = JSONValueField(allow_null=True)
    inReplyTo = serializers.CharField(source="in_reply_to", allow_null=True)
    references = serializers.CharField(allow_null=True)
    attachments = serializers.SerializerMethodField()
    authentication = MessageAuthenticationSerializer(source="*")
    draftRevisions = serializers.SerializerMethodField()

    @extend_schema_field(InboundAttachmentSerializer(many=True))
    def get_attachments(self, message: InboundMessage) -> list[dict[str, Any]]:
        return message.attachment_meta or []

    @extend_schema_field({"type": "array", "items": {"type": "object", "additionalProperties": True}})
    def get_draftRevisions(self, message: InboundMessage) -> list[dict[str, Any]]:
        return message.draft_revisions or []


def _json_or_text(value: Any) -> Any:
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


class AgentActionSerializer(serializers.Serializer):
    """One step the agent ran on a message."""

    id = serializers.CharField()
    actionType = serializers.ChoiceField(source="action_type", choices=StepKind.choices)
    status = serializers.ChoiceField(choices=ActionStatus.choices)
    input = serializers.SerializerMethodField()
    output = serializers.SerializerMethodField()
    errorMessage = serializers.CharField(source="error_message", allow_null=True)
    retryCount = serializers.IntegerField(source="retry_count")
    startedAt = TimestampField(source="started_at", allow_null=True)
    completedAt = TimestampField(source="completed_at", allow_null=True)
    durationMs = serializers.IntegerField(source="duration_ms", allow_null=True)
    modelUsed = serializers.CharField(source="model_used", allow_null=True)
    tokenUsage = JSONValueField(source="token_usage", allow_null=True)

    @extend_schema_field(OpenApiTypes.ANY)
    def get_input(self, action: Any) -> Any:
        """Parsed JSON when valid, else the text."""
        return _json_or_text(action.input)

    @extend_schema_field(OpenApiTypes.ANY)
    def get_output(self, action: Any) -> Any:
        return _json_or_text(action.output)
