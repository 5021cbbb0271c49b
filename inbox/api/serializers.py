"""Wire shapes of API-33/34: input serializers validate (400 naming the field), output serializers render."""

from __future__ import annotations

import json
from typing import Any

from rest_framework import serializers

from inbox.models import AgentAction, InboundMessage, ProcessingStatus
from inbox.receive import AUTH_RESULTS


class FlexibleToField(serializers.Field):
    """`to`: a string or an array of strings."""

    def to_internal_value(self, data: Any) -> list[str]:
        if isinstance(data, str):
            data = [data]
        if not isinstance(data, list) or not data or not all(isinstance(x, str) and x.strip() for x in data):
            raise serializers.ValidationError("to must be a string or a non-empty array of strings")
        return [x.strip() for x in data]

    def to_representation(self, value: Any) -> Any:
        return value


class AttachmentInput(serializers.Serializer):
    filename = serializers.CharField(allow_blank=True, max_length=500)
    contentType = serializers.CharField(max_length=200)
    size = serializers.IntegerField(min_value=0)


class AuthenticationInput(serializers.Serializer):
    spf = serializers.ChoiceField(choices=AUTH_RESULTS, required=False)
    dkim = serializers.ChoiceField(choices=AUTH_RESULTS, required=False)
    dmarc = serializers.ChoiceField(choices=AUTH_RESULTS, required=False)


class MessageIngestInput(serializers.Serializer):
    messageId = serializers.CharField(max_length=998)
    # `from` is a Python keyword: declared below through `fields`
    to = FlexibleToField()
    subject = serializers.CharField(required=False, allow_blank=True, max_length=998, default="")
    textBody = serializers.CharField(required=False, allow_blank=True, trim_whitespace=False)
    htmlBody = serializers.CharField(required=False, allow_blank=True, trim_whitespace=False)
    inReplyTo = serializers.CharField(required=False, allow_blank=True, max_length=998)
    references = serializers.CharField(required=False, allow_blank=True)
    headers = serializers.DictField(child=serializers.CharField(allow_blank=True), required=False)
    attachments = AttachmentInput(many=True, required=False)
    receivedAt = serializers.DateTimeField(required=False)
    authentication = AuthenticationInput(required=False)

    def get_fields(self) -> dict[str, serializers.Field]:
        fields = super().get_fields()
        fields["from"] = serializers.CharField(max_length=500)
        return fields


class DraftEditInput(serializers.Serializer):
    draftResponse = serializers.CharField(trim_whitespace=False)
    draftSubject = serializers.CharField(required=False, allow_blank=True, max_length=998)


class ApproveInput(serializers.Serializer):
    draftResponse = serializers.CharField(required=False, trim_whitespace=False)
    draftSubject = serializers.CharField(required=False, allow_blank=True, max_length=998)


class RejectInput(serializers.Serializer):
    reason = serializers.CharField(required=False, allow_blank=True, max_length=1000)


class ListFilterInput(serializers.Serializer):
    processingStatus = serializers.ListField(
        child=serializers.ChoiceField(choices=ProcessingStatus.values), required=False
    )
    threadId = serializers.UUIDField(required=False)
    contactId = serializers.UUIDField(required=False)
    receivedAfter = serializers.DateTimeField(required=False)
    receivedBefore = serializers.DateTimeField(required=False)


def _iso(value: Any) -> str | None:
    return value.isoformat().replace("+00:00", "Z") if value else None


def _from(m: InboundMessage) -> str:
    return f"{m.from_name} <{m.from_email}>" if m.from_name else m.from_email


class MessageOutput(serializers.BaseSerializer):
    """API-33 Message; `detail=True` adds the single-message fields."""

    def __init__(self, *args: Any, detail: bool = False, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.detail = detail

    def to_representation(self, m: InboundMessage) -> dict[str, Any]:
        draft = None
        if m.draft_response is not None:
            draft = {
                "response": m.draft_response,
                "subject": m.draft_subject,
                "options": m.draft_options,
                "confidenceScore": m.confidence_score,
                "quality": m.draft_quality,
                "isEdited": m.is_draft_edited,
                "savedAt": _iso(m.draft_saved_at),
            }
        pending = m.pending_auto_send
        data = {
            "id": str(m.pk),
            "messageId": m.message_id,
            "from": _from(m),
            "to": m.to,
            "subject": m.subject,
            "threadId": str(m.thread_id) if m.thread_id else None,
            "contactId": str(m.contact_id) if m.contact_id else None,
            "processingStatus": m.processing_status,
            "receivedAt": _iso(m.received_at),
            "processedAt": _iso(m.processed_at),
            "securityFlags": m.security_flags,
            "classification": m.classification,
            "agentDecision": m.agent_decision,
            "draft": draft,
            "pendingAutoSend": {"sendAt": pending.get("send_at")} if pending else None,
            "approvalSource": m.approval_source,
            "isAutoSendBlocked": m.is_auto_send_blocked,
            "errorMessage": m.error_message,
        }
        if self.detail:
            data.update(
                {
                    "textBody": m.text_body,
                    "htmlBody": m.html_body,
                    "headers": m.headers,
                    "inReplyTo": m.in_reply_to,
                    "references": m.references,
                    "attachments": m.attachment_meta or [],
                    "authentication": {"spf": m.spf_result, "dkim": m.dkim_result, "dmarc": m.dmarc_result},
                    "draftRevisions": m.draft_revisions or [],
                }
            )
        return data


def _json_or_text(value: Any) -> Any:
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


class ActionOutput(serializers.BaseSerializer):
    def to_representation(self, a: AgentAction) -> dict[str, Any]:
        return {
            "id": str(a.pk),
            "actionType": a.action_type,
            "status": a.status,
            "input": _json_or_text(a.input),
            "output": _json_or_text(a.output),
            "errorMessage": a.error_message,
            "retryCount": a.retry_count,
            "startedAt": _iso(a.started_at),
            "completedAt": _iso(a.completed_at),
            "durationMs": a.duration_ms,
            "modelUsed": a.model_used,
            "tokenUsage": a.token_usage,
        }
