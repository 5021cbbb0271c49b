"""`/api/v1/inbox/...` views (API-33, API-34). Thin: serializers check the request, `inbox.receive` /
`inbox.review` act, serializers answer with the message (and the transition object)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.request import Request
from rest_framework.response import Response

from inbox import review
from inbox.api.serializers import (
    AgentActionSerializer,
    ApproveSerializer,
    DraftEditSerializer,
    MessageDetailSerializer,
    MessageIngestSerializer,
    MessageListQuerySerializer,
    MessageSerializer,
    RejectSerializer,
)
from inbox.models import AgentAction, InboundMessage
from inbox.receive import InvalidMessage, MessageTooLarge, ParsedMessage, message_receive, parse_address
from owlat.api.base import ApiView, validated
from owlat.api.errors import invalid_input
from owlat.api.schema import envelope, errors, transitioned_envelope

MESSAGE_ID = OpenApiParameter(
    "message_id", OpenApiTypes.UUID, OpenApiParameter.PATH, description="The message's id."
)


class InboxView(ApiView):
    feature_flag = "inbox"

    def get_message(self, message_id: str) -> InboundMessage:
        return self.get_owned(InboundMessage, message_id, "message")


@extend_schema(tags=["Inbox"])
class MessageListView(InboxView):
    required_scopes = {"GET": "inbox:read", "POST": "inbox:write"}
    ordering = ("-received_at", "-id")
    list_key = "inbox/messages"

    @extend_schema(
        operation_id="inbox_messages_list",
        summary="List inbound messages",
        description="Newest first. Scope `inbox:read`.",
        parameters=[MessageListQuerySerializer],
        responses={200: MessageSerializer(many=True), **errors(400)},
    )
    def get(self, request: Request) -> Response:
        params = validated(MessageListQuerySerializer, request.query_params)
        queryset = InboundMessage.objects.filter(organization_id=self.organization_id)
        if params.get("processingStatus"):
            queryset = queryset.filter(processing_status__in=params["processingStatus"])
        if params.get("threadId"):
            queryset = queryset.filter(thread_id=params["threadId"])
        if params.get("contactId"):
            queryset = queryset.filter(contact_id=params["contactId"])
        if params.get("receivedAfter"):
            queryset = queryset.filter(received_at__gte=params["receivedAfter"])
        if params.get("receivedBefore"):
            queryset = queryset.filter(received_at__lt=params["receivedBefore"])
        page = self.paginate_queryset(queryset)
        return self.get_paginated_response(MessageSerializer(page, many=True).data)

    @extend_schema(
        operation_id="inbox_messages_create",
        summary="Receive an inbound message",
        description="For integrations without an MTA webhook: the message takes the same path as mail "
        "received by the server (201, `received`, or `archived` for a blocked sender). A `messageId` already "
        "received answers 200 with that message and runs nothing again. Without authentication results the "
        "reply is never sent automatically. Scope `inbox:write`.",
        request=MessageIngestSerializer,
        responses={
            201: envelope(MessageSerializer, "Message"),
            200: envelope(MessageSerializer, "Message"),
            **errors(400),
        },
    )
    def post(self, request: Request) -> Response:
        data = validated(MessageIngestSerializer, request.data)
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
            attachments=[
                {k: a[k] for k in ("filename", "contentType", "size")} for a in data.get("attachments") or []
            ],
            attachment_contents=[dict(a) for a in data.get("attachments") or [] if "content" in a],
            authentication={k: auth.get(k) for k in ("spf", "dkim", "dmarc")},
            received_at=data.get("receivedAt"),
        )
        try:
            result = message_receive(organization_id=self.organization_id, parsed=parsed, actor=self.actor)
        except MessageTooLarge as exc:
            raise invalid_input(
                str(exc), field="textBody", data={"limit": exc.limit, "unit": "bytes"}
            ) from None
        except InvalidMessage as exc:
            raise invalid_input(str(exc), field=exc.field) from None
        out = MessageSerializer(result.message).data
        return self.created(out) if result.created else self.ok(out)


@extend_schema(tags=["Inbox"], parameters=[MESSAGE_ID])
class MessageDetailView(InboxView):
    required_scopes = {"GET": "inbox:read"}

    @extend_schema(
        operation_id="inbox_messages_retrieve",
        summary="Get an inbound message",
        description="With its bodies, headers, attachments, authentication results and the draft's "
        "revisions. Scope `inbox:read`.",
        responses={200: envelope(MessageDetailSerializer, "MessageDetail"), **errors(400, 404)},
    )
    def get(self, request: Request, message_id: str) -> Response:
        return self.ok(MessageDetailSerializer(self.get_message(message_id)).data)


@extend_schema(tags=["Inbox"], parameters=[MESSAGE_ID])
class MessageActionsView(InboxView):
    required_scopes = {"GET": "inbox:read"}

    @extend_schema(
        operation_id="inbox_messages_actions_list",
        summary="List the agent's steps on a message",
        description="Oldest first, not paginated. Scope `inbox:read`.",
        responses={200: envelope(AgentActionSerializer, "AgentAction", many=True), **errors(400, 404)},
    )
    def get(self, request: Request, message_id: str) -> Response:
        message = self.get_message(message_id)
        rows = AgentAction.objects.filter(
            inbound_message=message, organization_id=self.organization_id
        ).order_by("created_at", "id")
        return self.ok(AgentActionSerializer(rows, many=True).data)


# --- review verbs (API-34) -----------------------------------------------------------------------------------


def _approve(view: ReviewView, message: InboundMessage, body: dict[str, Any]) -> Any:
    data = validated(ApproveSerializer, body)
    return review.message_approve(
        message_id=message.pk,
        organization_id=view.organization_id,
        actor=view.actor,
        draft_response=data.get("draftResponse"),
        draft_subject=data.get("draftSubject") or None,
        keep_customer_links=bool(data.get("keepCustomerLinks")),
    )


def _edit(view: ReviewView, message: InboundMessage, body: dict[str, Any]) -> Any:
    data = validated(DraftEditSerializer, body)
    return review.message_edit(
        message_id=message.pk,
        organization_id=view.organization_id,
        actor=view.actor,
        draft_response=data["draftResponse"],
        draft_subject=data.get("draftSubject") or None,
    )


def _reject(view: ReviewView, message: InboundMessage, body: dict[str, Any]) -> Any:
    data = validated(RejectSerializer, body)
    return review.message_reject(
        message_id=message.pk,
        organization_id=view.organization_id,
        actor=view.actor,
        reason=data.get("reason"),
    )


def _undo(view: ReviewView, message: InboundMessage, body: dict[str, Any]) -> Any:
    return review.pending_send_cancel(
        message_id=message.pk, organization_id=view.organization_id, actor=view.actor, reason="undo"
    )


def _simple(action: Callable[..., Any]) -> Callable[..., Any]:
    def act(view: ReviewView, message: InboundMessage, body: dict[str, Any]) -> Any:
        return action(message_id=message.pk, organization_id=view.organization_id, actor=view.actor)

    return act


#: verb → (action, request serializer, summary, description)
REVIEW_VERBS: dict[str, tuple[Callable[..., Any], type | None, str, str]] = {
    "approve": (
        _approve,
        ApproveSerializer,
        "Approve a draft reply",
        "An edit given here is applied first. The reply goes out after the undo window "
        "(`pendingAutoSend.sendAt`). 422 `no_draft` without a draft.",
    ),
    "edit": (
        _edit,
        DraftEditSerializer,
        "Edit a draft reply",
        "Only while the draft is ready for review (422 `not_draft_ready`); keeps the previous text as a "
        "revision. Answers the message without a `transition`.",
    ),
    "reject": (_reject, RejectSerializer, "Reject a draft reply", "No reply is sent."),
    "undo": (
        _undo,
        None,
        "Undo an approval",
        "Within the undo window the reply is not sent and the draft is ready for review again "
        "(422 `no_pending_send`, `not_approved` or `already_sent` otherwise).",
    ),
    "release": (
        _simple(review.message_release),
        None,
        "Release a quarantined message",
        "The agent processes it as if it had not been flagged.",
    ),
    "retry": (_simple(review.message_retry), None, "Retry a failed message", "The agent starts over."),
    "block-sender": (
        _simple(review.message_block_sender),
        None,
        "Block the sender",
        "Later messages from this address are archived unread.",
    ),
}


class ReviewView(InboxView):
    required_scopes = {"POST": "inbox:review"}
    empty_body_methods = frozenset({"POST"})
    verb: str = ""

    def post(self, request: Request, message_id: str) -> Response:
        message = self.get_message(message_id)
        action = REVIEW_VERBS[self.verb][0]
        outcome = action(self, message, request.data)
        data = MessageSerializer(InboundMessage.objects.get(pk=message.pk)).data if outcome.ok else None
        if self.verb == "edit" and outcome.ok:
            return self.ok(data)
        return self.transitioned(data, outcome)


def review_view(verb: str) -> type[ReviewView]:
    """`POST inbox/messages/{id}/<verb>`: 200 with the message (and `transition`), or 422 with the reason."""
    _, request_serializer, summary, description = REVIEW_VERBS[verb]
    answer = (
        envelope(MessageSerializer, "Message") if verb == "edit" else transitioned_envelope(MessageSerializer)
    )

    @extend_schema(
        operation_id=f"inbox_messages_{verb.replace('-', '_')}",
        summary=summary,
        description=f"{description} Scope `inbox:review`.",
        tags=["Inbox"],
        parameters=[MESSAGE_ID],
        request=request_serializer,
        responses={200: answer, **errors(400, 404, 422)},
    )
    def post(self: ReviewView, request: Request, message_id: str) -> Response:
        return ReviewView.post(self, request, message_id)

    return type(f"{verb.title().replace('-', '')}View", (ReviewView,), {"verb": verb, "post": post})
