"""Kernel endpoints: contacts (API-13…18), topic membership (API-19/20) and topics (API-25); segments are in
`owlat.api.segment_views`.

Thin views: serializers validate (`owlat.api.serializers`), the kernel services write (`owlat.contacts`,
`owlat.topics`, `owlat.segments`), serializers answer.
"""

from __future__ import annotations

import ipaddress
import re
from typing import Any
from urllib.parse import unquote_to_bytes

from django.db.models import Case, IntegerField, Q, QuerySet, Value, When
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.request import Request
from rest_framework.response import Response

from owlat.api.base import ApiView, parse_uuid, require_uuid, validated
from owlat.api.errors import ApiError, already_exists, invalid_input, not_found
from owlat.api.schema import CONTACT_REF_SCHEMA, DeletedSerializer, envelope, errors
from owlat.api.serializers import (
    ContactCreateSerializer,
    ContactSerializer,
    ContactUpdateSerializer,
    SearchQuerySerializer,
    TopicMemberSerializer,
    TopicSerializer,
    TopicSubscribedSerializer,
    TopicSubscribeSerializer,
    TopicUnsubscribedSerializer,
    TopicWriteSerializer,
)
from owlat.inuse import topic_in_use
from owlat.models import Contact, ContactTopic, Segment, Topic

INVALID_CONTACT_PARAM = "Invalid contact ID or email format"
_MALFORMED_ESCAPE = re.compile(r"%(?![0-9A-Fa-f]{2})")

SEARCH = OpenApiParameter(
    "search", str, description="Words to look for (case-insensitive); every word must match."
)
ID_OR_EMAIL = OpenApiParameter(
    "id_or_email",
    CONTACT_REF_SCHEMA,
    OpenApiParameter.PATH,
    description="The contact's id or email address (percent-encoded).",
)
TOPIC_ID = OpenApiParameter(
    "topic_id", OpenApiTypes.UUID, OpenApiParameter.PATH, description="The topic's id."
)
EMAIL_OR_ID = OpenApiParameter(
    "email_or_id",
    CONTACT_REF_SCHEMA,
    OpenApiParameter.PATH,
    description="The contact's id or email address (percent-encoded).",
)


def search_term(request: Request) -> str | None:
    """`?search=` validated (a NUL byte is a 400 naming `search`); blank → None."""
    return validated(SearchQuerySerializer, request.query_params).get("search") or None


def _path_has_malformed_escape(request: Any) -> bool:
    """API-09: a malformed percent escape (or escapes that are not UTF-8) in the request path."""
    raw_uri = request.META.get("RAW_URI") or request.META.get("REQUEST_URI")
    if raw_uri:
        raw_path = raw_uri.split("?", 1)[0]
        if _MALFORMED_ESCAPE.search(raw_path):
            return True
        try:
            unquote_to_bytes(raw_path).decode("utf-8")
        except UnicodeDecodeError:
            return True
        return False
    path_info = request.META.get("PATH_INFO", "")
    try:
        path_info.encode("iso-8859-1").decode("utf-8")
    except (UnicodeEncodeError, UnicodeDecodeError):
        return True
    return bool(_MALFORMED_ESCAPE.search(request.path_info))


def resolve_contact_param(view: ApiView, raw: str) -> Contact:
    """API-09: `{idOrEmail}` → a live contact of the key's organization (400 / 404 "Contact not found")."""
    from owlat.contacts import MAX_EMAIL_LENGTH, is_valid_email, live_contacts, normalize_email

    value = raw
    if _path_has_malformed_escape(view.request._request) or "\x00" in value:
        raise invalid_input(INVALID_CONTACT_PARAM)
    if is_valid_email(value) and len(value.strip()) <= MAX_EMAIL_LENGTH:
        contact = live_contacts(view.organization_id).filter(email=normalize_email(value)).first()
    else:
        pk = parse_uuid(value)
        if pk is None or "@" in value:
            raise invalid_input(INVALID_CONTACT_PARAM)
        contact = live_contacts(view.organization_id).filter(pk=pk).first()
    if contact is None:
        raise not_found("Contact not found")
    return contact


def _client_ip(request: Any) -> str | None:
    value = request.META.get("REMOTE_ADDR")
    try:
        return str(ipaddress.ip_address(value)) if value else None
    except ValueError:
        return None


def list_by_name(
    view: ApiView, request: Request, model: type[Topic | Segment], serializer_class: type
) -> Response:
    """Topics or segments, newest first; `?search=` filters by name (API-25)."""
    queryset = model.objects.filter(organization_id=view.organization_id)
    term = search_term(request)
    if term:
        queryset = queryset.filter(name__icontains=term)
    return view.list_response(queryset, serializer_class)


# --- contacts ------------------------------------------------------------------------------------------------


def _search_contacts(queryset: QuerySet[Contact], term: str) -> QuerySet[Contact]:
    """Every word must match email, first or last name (case-insensitive); ranked by how well the term matches."""
    for word in term.split():
        queryset = queryset.filter(
            Q(email__icontains=word) | Q(first_name__icontains=word) | Q(last_name__icontains=word)
        )
    lowered = term.lower()
    return queryset.annotate(
        relevance=Case(
            When(email=lowered, then=Value(0)),
            When(
                Q(email__istartswith=lowered) | Q(first_name__iexact=term) | Q(last_name__iexact=term),
                then=Value(1),
            ),
            When(
                Q(email__icontains=lowered) | Q(first_name__icontains=term) | Q(last_name__icontains=term),
                then=Value(2),
            ),
            default=Value(3),
            output_field=IntegerField(),
        )
    )


class ContactListView(ApiView):
    required_scopes = {"GET": "contacts:read", "POST": "contacts:write"}
    list_key = "contacts"

    @extend_schema(
        operation_id="contacts_list",
        summary="List contacts",
        description="Newest first; with `search`, the best matches first (exact email, then prefix, then "
        "substring of email or name). Scope `contacts:read`.",
        parameters=[SEARCH],
        responses={200: ContactSerializer(many=True), **errors(400)},
        tags=["Contacts"],
    )
    def get(self, request: Request) -> Response:
        from owlat.contacts import live_contacts

        queryset = live_contacts(self.organization_id)
        term = search_term(request)
        if term:
            queryset = _search_contacts(queryset, term)
            self.ordering, self.list_key = ("relevance", "-created_at", "-id"), "contacts:search"
        return self.list_response(queryset, ContactSerializer)

    @extend_schema(
        operation_id="contacts_create",
        summary="Create a contact",
        description="Fails with 409 when a contact with this email exists. Scope `contacts:write`.",
        request=ContactCreateSerializer,
        responses={201: envelope(ContactSerializer), **errors(400, 409)},
        tags=["Contacts"],
    )
    def post(self, request: Request) -> Response:
        from owlat.contacts import ContactAlreadyExists, contact_find_or_create

        fields = validated(ContactCreateSerializer, request.data)
        try:
            contact, _ = contact_find_or_create(
                organization_id=self.organization_id,
                source="api",
                actor=self.actor,
                mode="strict",
                **fields,
            )
        except ContactAlreadyExists:
            raise already_exists("A contact with this email already exists")
        return self.created(ContactSerializer(contact).data)


@extend_schema(parameters=[ID_OR_EMAIL], tags=["Contacts"])
class ContactDetailView(ApiView):
    required_scopes = {"GET": "contacts:read", "PUT": "contacts:write", "DELETE": "contacts:write"}

    @extend_schema(
        operation_id="contacts_retrieve",
        summary="Get a contact",
        description="By id or by email address. Scope `contacts:read`.",
        responses={200: envelope(ContactSerializer), **errors(400, 404)},
    )
    def get(self, request: Request, id_or_email: str) -> Response:
        return self.ok(ContactSerializer(resolve_contact_param(self, id_or_email)).data)

    @extend_schema(
        operation_id="contacts_update",
        summary="Update a contact",
        description="Only the keys sent change. Scope `contacts:write`.",
        request=ContactUpdateSerializer,
        responses={200: envelope(ContactSerializer), **errors(400, 404, 409)},
    )
    def put(self, request: Request, id_or_email: str) -> Response:
        from owlat.contacts import ContactAlreadyExists, contact_update

        changes = validated(ContactUpdateSerializer, request.data)
        contact = resolve_contact_param(self, id_or_email)
        try:
            contact, _ = contact_update(contact=contact, changes=changes, actor=self.actor)
        except ContactAlreadyExists as exc:
            raise already_exists(f"A contact with this email already exists: {exc.email}")
        return self.ok(ContactSerializer(contact).data)

    @extend_schema(
        operation_id="contacts_destroy",
        summary="Erase a contact",
        description="Deletes the contact and its personal data permanently. Scope `contacts:write`.",
        responses={200: envelope(DeletedSerializer, "Deleted"), **errors(400, 404)},
    )
    def delete(self, request: Request, id_or_email: str) -> Response:
        from owlat.contacts import contact_erase

        contact = resolve_contact_param(self, id_or_email)
        return self.deleted(contact_erase(contact=contact, actor=self.actor))


# --- topic membership (API-19/20) ------------------------------------------------------------------------


@extend_schema(parameters=[TOPIC_ID], tags=["Topics"])
class TopicContactsView(ApiView):
    required_scopes = {"GET": "topics:read", "POST": "topics:write"}

    @extend_schema(
        operation_id="topics_contacts_list",
        summary="List a topic's members",
        description="Most recently added first. Scope `topics:read`.",
        responses={200: TopicMemberSerializer(many=True), **errors(400, 404)},
    )
    def get(self, request: Request, topic_id: str) -> Response:
        topic = self.get_owned(Topic, topic_id, "topic")
        queryset = ContactTopic.objects.filter(
            organization_id=self.organization_id, topic=topic, contact__deleted_at__isnull=True
        ).select_related("contact")
        self.ordering, self.list_key = ("-added_at", "-id"), f"topics/{topic.pk}/contacts"
        return self.list_response(queryset, TopicMemberSerializer)

    @extend_schema(
        operation_id="topics_contacts_create",
        summary="Subscribe a contact to a topic",
        description="By `email` or `contactId`. When the topic requires double opt-in, a confirmation email "
        "is sent and `doiStatus` is `pending`. Scope `topics:write`.",
        request=TopicSubscribeSerializer,
        responses={201: envelope(TopicSubscribedSerializer, "TopicSubscribed"), **errors(400, 404)},
    )
    def post(self, request: Request, topic_id: str) -> Response:
        from owlat.contacts import live_contacts, normalize_email
        from owlat.topics import PENDING_DOI, topic_subscribe

        topic_pk = require_uuid(topic_id, "topic")
        fields = validated(TopicSubscribeSerializer, request.data)
        topic = self.get_owned(Topic, topic_pk, "topic")
        contacts = live_contacts(self.organization_id)
        if fields.get("contactId") is not None:
            contact = contacts.filter(pk=fields["contactId"]).first()
            if contact is None:
                raise not_found("Contact not found")
        else:
            address = normalize_email(fields["email"])
            contact = contacts.filter(email=address).first()
            if contact is None:
                raise not_found(f'Contact with email "{address}" not found')
        outcome = topic_subscribe(
            contact=contact,
            topic=topic,
            source="public_api",
            actor=self.actor,
            consent_ip=_client_ip(request._request),
            consent_user_agent=request.headers.get("User-Agent"),
        )
        contact.refresh_from_db(fields=["doi_status"])
        doi_status = "pending" if outcome == PENDING_DOI else contact.doi_status
        return self.created(
            {"success": True, "contactId": str(contact.pk), "topicId": str(topic.pk), "doiStatus": doi_status}
        )


@extend_schema(parameters=[TOPIC_ID, EMAIL_OR_ID], tags=["Topics"])
class TopicContactDeleteView(ApiView):
    required_scopes = {"DELETE": "topics:write"}

    @extend_schema(
        operation_id="topics_contacts_destroy",
        summary="Unsubscribe a contact from a topic",
        description="`removed` is false when the contact was not a member. Scope `topics:write`.",
        responses={200: envelope(TopicUnsubscribedSerializer, "TopicUnsubscribed"), **errors(400, 404)},
    )
    def delete(self, request: Request, topic_id: str, email_or_id: str) -> Response:
        from owlat.contacts import is_valid_email, normalize_email
        from owlat.topics import topic_unsubscribe

        topic_pk = require_uuid(topic_id, "topic")
        # API-09 format errors first, then the topic, then the contact.
        if _path_has_malformed_escape(request._request) or "\x00" in email_or_id:
            raise invalid_input(INVALID_CONTACT_PARAM)
        by_email = is_valid_email(email_or_id)
        if not by_email and (parse_uuid(email_or_id) is None or "@" in email_or_id):
            raise invalid_input(INVALID_CONTACT_PARAM)
        topic = self.get_owned(Topic, topic_pk, "topic")
        try:
            contact = resolve_contact_param(self, email_or_id)
        except ApiError as exc:
            if by_email and exc.status == 404:
                raise not_found(f'Contact with email "{normalize_email(email_or_id)}" not found')
            raise
        removed = topic_unsubscribe(contact=contact, topic=topic, source="public_api", actor=self.actor)
        return self.ok({"success": True, "removed": removed})


# --- topics (API-25) ---------------------------------------------------------------------------------------


class TopicListView(ApiView):
    required_scopes = {"GET": "topics:read", "POST": "topics:manage"}
    list_key = "topics"

    @extend_schema(
        operation_id="topics_list",
        summary="List topics",
        description="Newest first; `search` filters by name. Scope `topics:read`.",
        parameters=[SEARCH],
        responses={200: TopicSerializer(many=True), **errors(400)},
        tags=["Topics"],
    )
    def get(self, request: Request) -> Response:
        return list_by_name(self, request, Topic, TopicSerializer)

    @extend_schema(
        operation_id="topics_create",
        summary="Create a topic",
        description="Double opt-in is required unless `requireDoubleOptIn` is false. Scope `topics:manage`.",
        request=TopicWriteSerializer,
        responses={201: envelope(TopicSerializer), **errors(400)},
        tags=["Topics"],
    )
    def post(self, request: Request) -> Response:
        from owlat.topics import topic_create

        fields = validated(TopicWriteSerializer, request.data)
        topic = topic_create(organization_id=self.organization_id, actor=self.actor, **fields)
        return self.created(TopicSerializer(topic).data)


@extend_schema(parameters=[TOPIC_ID], tags=["Topics"])
class TopicDetailView(ApiView):
    required_scopes = {
        "GET": "topics:read",
        "PUT": "topics:manage",
        "PATCH": "topics:manage",
        "DELETE": "topics:manage",
    }

    @extend_schema(
        operation_id="topics_retrieve",
        summary="Get a topic",
        description="Scope `topics:read`.",
        responses={200: envelope(TopicSerializer), **errors(400, 404)},
    )
    def get(self, request: Request, topic_id: str) -> Response:
        return self.ok(TopicSerializer(self.get_owned(Topic, topic_id, "topic")).data)

    @extend_schema(
        operation_id="topics_update",
        summary="Update a topic",
        description="Only the keys sent change (PUT and PATCH alike). Scope `topics:manage`.",
        request=TopicWriteSerializer(partial=True),
        responses={200: envelope(TopicSerializer), **errors(400, 404)},
    )
    def put(self, request: Request, topic_id: str) -> Response:
        from owlat.topics import topic_update

        topic_pk = require_uuid(topic_id, "topic")
        fields = validated(TopicWriteSerializer, request.data, partial=True)
        topic = topic_update(topic=self.get_owned(Topic, topic_pk, "topic"), changes=fields)
        return self.ok(TopicSerializer(topic).data)

    patch = put

    @extend_schema(
        operation_id="topics_destroy",
        summary="Delete a topic",
        description="Refused (422 `topic_in_use`, with `usedBy`) while a campaign or automation uses it. "
        "Scope `topics:manage`.",
        responses={200: envelope(DeletedSerializer, "Deleted"), **errors(400, 404, 422)},
    )
    def delete(self, request: Request, topic_id: str) -> Response:
        from owlat.topics import topic_delete

        topic = self.get_owned(Topic, topic_id, "topic")
        return self.delete_unless_in_use(topic, "topic", topic_in_use, lambda: topic_delete(topic=topic))
