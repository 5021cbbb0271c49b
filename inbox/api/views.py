"""API-33/34 views: validate with a serializer, call one service, render with an output serializer."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from inbox.api.serializers import (
    ActionOutput,
    ApproveInput,
    DraftEditInput,
    ListFilterInput,
    MessageIngestInput,
    MessageOutput,
    RejectInput,
)
from inbox.models import AgentAction, InboundMessage
from inbox.receive import InvalidMessage, MessageTooLarge, ParsedMessage, message_receive, parse_address
from inbox.review import (
    message_approve,
    message_block_sender,
    message_edit,
    message_reject,
    message_release,
    message_retry,
    pending_send_cancel,
)
from owlat.api.base import outcome_error, require_uuid
from owlat.api.compat import LegacyApiView as ApiView
from owlat.api.errors import invalid_input, not_found


def _valid(serializer_class: type[serializers.Serializer], data: Any) -> dict[str, Any]:
    s = serializer_class(data=data)
    s.is_valid(raise_exception=True)
    return dict(s.validated_data)


class InboxView(ApiView):
    feature_flag = "inbox"

    def message(self, message_id: str) -> InboundMessage:
        pk = require_uuid(message_id, "message")
        m = InboundMessage.objects.filter(pk=pk, organization_id=self.organization_id).first()
        if m is None:
            raise not_found("Message not found")
        return m

    def refreshed(self, message_id: Any) -> dict[str, Any]:
        return MessageOutput(InboundMessage.objects.get(pk=message_id)).data


class MessageListView(InboxView):
    scopes = {"GET": "inbox:read", "POST": "inbox:write"}

    def get(self, request):
        q = request._request.GET
        raw = {k: q.get(k) for k in ("threadId", "contactId", "receivedAfter", "receivedBefore") if q.get(k)}
        statuses = [s for v in q.getlist("processingStatus") for s in v.split(",") if s]
        if statuses:
            raw["processingStatus"] = statuses
        f = _valid(ListFilterInput, raw)
        qs = InboundMessage.objects.filter(organization_id=self.organization_id)
        if f.get("processingStatus"):
            qs = qs.filter(processing_status__in=f["processingStatus"])
        if f.get("threadId"):
            qs = qs.filter(thread_id=f["threadId"])
        if f.get("contactId"):
            qs = qs.filter(contact_id=f["contactId"])
        if f.get("receivedAfter"):
            qs = qs.filter(received_at__gte=f["receivedAfter"])
        if f.get("receivedBefore"):
            qs = qs.filter(received_at__lt=f["receivedBefore"])
        return self.paginated(qs, lambda m: MessageOutput(m).data, order=("-received_at", "-id"))

    def post(self, request):
        data = _valid(MessageIngestInput, self.body())
        try:
            from_name, from_email = parse_address(data["from"])
        except InvalidMessage as exc:
            raise invalid_input(str(exc), field="from") from None
        auth = data.get("authentication") or {}
        parsed = ParsedMessage(
            message_id=data["messageId"].strip(),
            from_email=from_email,
            from_name=from_name,
            to=data["to"],
            subject=data.get("subject") or "",
            text_body=data.get("textBody"),
            html_body=data.get("htmlBody"),
            in_reply_to=data.get("inReplyTo") or None,
            references=data.get("references") or None,
            headers={k.lower(): v for k, v in (data.get("headers") or {}).items()},
            attachments=[dict(a) for a in data.get("attachments") or []],
            authentication={k: auth.get(k) for k in ("spf", "dkim", "dmarc")},
            received_at=data.get("receivedAt"),
        )
        try:
            result = message_receive(organization_id=self.organization_id, parsed=parsed, actor=self.actor)
        except MessageTooLarge as exc:
            raise invalid_input(str(exc), field="textBody") from None
        except InvalidMessage as exc:
            raise invalid_input(str(exc), field=exc.field) from None
        out = MessageOutput(result.message).data
        return self.created(out) if result.created else self.ok(out)


class MessageDetailView(InboxView):
    required_scope = "inbox:read"

    def get(self, request, message_id: str):
        return self.ok(MessageOutput(self.message(message_id), detail=True).data)


class MessageActionsView(InboxView):
    required_scope = "inbox:read"

    def get(self, request, message_id: str):
        m = self.message(message_id)
        rows = AgentAction.objects.filter(inbound_message=m, organization_id=self.organization_id).order_by(
            "created_at", "id"
        )
        return self.ok([ActionOutput(a).data for a in rows])


class ReviewView(InboxView):
    required_scope = "inbox:review"
    verb = ""

    def post(self, request, message_id: str):
        m = self.message(message_id)
        outcome = self.act(m, self.body(required=False))
        if not outcome.ok:
            raise outcome_error(outcome)
        data = self.refreshed(m.pk)
        if self.verb == "edit":
            return self.ok(data)
        return self.transitioned(data, outcome)

    def act(self, m: InboundMessage, body: dict[str, Any]):
        raise NotImplementedError


class ApproveView(ReviewView):
    verb = "approve"

    def act(self, m, body):
        data = _valid(ApproveInput, body)
        return message_approve(
            message_id=m.pk,
            organization_id=self.organization_id,
            actor=self.actor,
            draft_response=data.get("draftResponse"),
            draft_subject=data.get("draftSubject") or None,
        )


class EditView(ReviewView):
    verb = "edit"

    def act(self, m, body):
        data = _valid(DraftEditInput, body)
        return message_edit(
            message_id=m.pk,
            organization_id=self.organization_id,
            actor=self.actor,
            draft_response=data["draftResponse"],
            draft_subject=data.get("draftSubject") or None,
        )


class RejectView(ReviewView):
    verb = "reject"

    def act(self, m, body):
        data = _valid(RejectInput, body)
        return message_reject(
            message_id=m.pk, organization_id=self.organization_id, actor=self.actor, reason=data.get("reason")
        )


class UndoView(ReviewView):
    verb = "undo"

    def act(self, m, body):
        return pending_send_cancel(
            message_id=m.pk, organization_id=self.organization_id, actor=self.actor, reason="undo"
        )


class ReleaseView(ReviewView):
    verb = "release"

    def act(self, m, body):
        return message_release(message_id=m.pk, organization_id=self.organization_id, actor=self.actor)


class RetryView(ReviewView):
    verb = "retry"

    def act(self, m, body):
        return message_retry(message_id=m.pk, organization_id=self.organization_id, actor=self.actor)


class BlockSenderView(ReviewView):
    verb = "block-sender"

    def act(self, m, body):
        return message_block_sender(message_id=m.pk, organization_id=self.organization_id, actor=self.actor)
