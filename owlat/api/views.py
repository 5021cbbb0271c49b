"""Kernel endpoints: contacts (API-13…18), topic membership (API-19/20), topics and segments (API-25).

Views are thin: they validate the wire format in the order the spec gives and call the kernel services
(`owlat.contacts`, `owlat.topics`, `owlat.conditions`, `owlat.segments`).
"""

from __future__ import annotations

import ipaddress
import re
import zoneinfo
from functools import lru_cache
from typing import Any
from urllib.parse import unquote_to_bytes

from django.db.models import Case, IntegerField, Q, QuerySet, Value, When
from drf_spectacular.utils import OpenApiParameter, extend_schema

from owlat.api.base import parse_uuid, require_uuid
from owlat.api.errors import ApiError, already_exists, invalid_input, invalid_state, not_found
from owlat.api.inuse import segment_in_use, topic_in_use
from owlat.api.legacy import LegacyApiView as ApiView
from owlat.api.serializers import contact_data, segment_data, topic_data, topic_member_data
from owlat.models import Contact, ContactTopic, Segment, Topic

LIST_PARAMETERS = [
    OpenApiParameter("limit", int, description="1–100, default 25"),
    OpenApiParameter("cursor", str, description="from the previous page's pagination.cursor"),
    OpenApiParameter("search", str),
]
NAME_MAX = 200
LANGUAGE_RE = re.compile(r"^[a-z]{2}(-[a-z]{2,3})?$", re.IGNORECASE)
INVALID_CONTACT_PARAM = "Invalid contact ID or email format"
_MALFORMED_ESCAPE = re.compile(r"%(?![0-9A-Fa-f]{2})")


# --- shared validation -------------------------------------------------------------------------------------


def _string_field(body: dict[str, Any], key: str, *, max_length: int | None = None) -> str | None:
    """An optional string: "<key> must be a string", "<key> must be at most N characters"."""
    if key not in body:
        return None
    value = body[key]
    if not isinstance(value, str):
        raise invalid_input(f"{key} must be a string", field=key)
    if max_length is not None and len(value) > max_length:
        raise invalid_input(f"{key} must be at most {max_length} characters", field=key)
    return value


def _bool_field(body: dict[str, Any], key: str) -> bool | None:
    if key not in body:
        return None
    if not isinstance(body[key], bool):
        raise invalid_input(f"{key} must be a boolean", field=key)
    return body[key]


def _int_field(body: dict[str, Any], key: str) -> int | None:
    if key not in body:
        return None
    value = body[key]
    if isinstance(value, bool) or not isinstance(value, int) or not -(2**31) <= value < 2**31:
        raise invalid_input(f"{key} must be an integer", field=key)
    return value


def _read_only(body: dict[str, Any], *keys: str) -> None:
    for key in keys:
        if key in body:
            raise invalid_input(f"{key} is read-only", field=key)


@lru_cache(maxsize=1)
def _timezones() -> frozenset[str]:
    return frozenset(zoneinfo.available_timezones())


def _contact_extras(body: dict[str, Any]) -> dict[str, Any]:
    """D-14 optional `language`, `timezone`, `properties` on POST/PUT /contacts."""
    extras: dict[str, Any] = {}
    if "language" in body:
        language = body["language"]
        if not isinstance(language, str):
            raise invalid_input("language must be a string", field="language")
        if not LANGUAGE_RE.match(language):
            raise invalid_input(
                "language must be a valid language code (e.g., 'en', 'de', 'fr', 'en-US')", field="language"
            )
        extras["language"] = language
    if "timezone" in body:
        tz = body["timezone"]
        if not isinstance(tz, str):
            raise invalid_input("timezone must be a string", field="timezone")
        if tz not in _timezones():
            raise invalid_input(
                "timezone must be a valid IANA time zone (e.g., 'Europe/Berlin')", field="timezone"
            )
        extras["timezone"] = tz
    if "properties" in body:
        properties = body["properties"]
        if not isinstance(properties, dict):
            raise invalid_input("properties must be an object", field="properties")
        for key, value in properties.items():
            if not key or len(key) > 100:
                raise invalid_input("properties keys must be 1 to 100 characters", field=f"properties.{key}")
            if value is not None and not isinstance(value, str | int | float | bool):
                raise invalid_input(
                    "properties values must be strings, numbers, booleans or null", field=f"properties.{key}"
                )
        extras["properties"] = properties
    return extras


def _path_has_malformed_escape(request) -> bool:
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
    if _path_has_malformed_escape(view.request._request):
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


def _topic(view: ApiView, topic_id: Any) -> Topic:
    topic = Topic.objects.filter(organization_id=view.organization_id, pk=topic_id).first()
    if topic is None:
        raise not_found("Topic not found")
    return topic


def _segment(view: ApiView, segment_id: Any) -> Segment:
    segment = Segment.objects.filter(organization_id=view.organization_id, pk=segment_id).first()
    if segment is None:
        raise not_found("Segment not found")
    return segment


def _client_ip(request) -> str | None:
    value = request.META.get("REMOTE_ADDR")
    try:
        return str(ipaddress.ip_address(value)) if value else None
    except ValueError:
        return None


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
    scopes = {"GET": "contacts:read", "POST": "contacts:write"}

    @extend_schema(
        operation_id="contacts_list",
        summary="List contacts (API-18)",
        parameters=LIST_PARAMETERS,
        responses={200: dict},
    )
    def get(self, request):
        from owlat.contacts import live_contacts

        queryset = live_contacts(self.organization_id)
        term = self.search_term()
        if term:
            queryset = _search_contacts(queryset, term)
            return self.paginated(
                queryset, contact_data, order=("relevance", "-created_at", "-id"), list_key="contacts:search"
            )
        return self.paginated(queryset, contact_data, order=("-created_at", "-id"), list_key="contacts")

    @extend_schema(summary="Create a contact (API-14)", request=dict, responses={201: dict})
    def post(self, request):
        from owlat.contacts import ContactAlreadyExists, contact_find_or_create, is_valid_email

        body = self.body()
        if "email" not in body:
            raise invalid_input("Email is required", field="email")
        email = body["email"]
        if not isinstance(email, str):
            raise invalid_input("Email must be a string", field="email")
        if not is_valid_email(email):
            raise invalid_input("Invalid email format", field="email")
        first_name = _string_field(body, "firstName", max_length=NAME_MAX)
        last_name = _string_field(body, "lastName", max_length=NAME_MAX)
        extras = _contact_extras(body)
        try:
            contact, _ = contact_find_or_create(
                organization_id=self.organization_id,
                email=email,
                source="api",
                actor=self.actor,
                mode="strict",
                first_name=first_name,
                last_name=last_name,
                **extras,
            )
        except ContactAlreadyExists:
            raise already_exists("A contact with this email already exists")
        return self.created(contact_data(contact))


class ContactDetailView(ApiView):
    scopes = {"GET": "contacts:read", "PUT": "contacts:write", "DELETE": "contacts:write"}

    @extend_schema(summary="Get a contact by id or email (API-15)", responses={200: dict})
    def get(self, request, id_or_email: str):
        return self.ok(contact_data(resolve_contact_param(self, id_or_email)))

    @extend_schema(summary="Update a contact (API-16)", request=dict, responses={200: dict})
    def put(self, request, id_or_email: str):
        from owlat.contacts import ContactAlreadyExists, contact_update, is_valid_email

        body = self.body()
        changes: dict[str, Any] = {}
        if "email" in body:
            if not isinstance(body["email"], str):
                raise invalid_input("email must be a string", field="email")
            if not is_valid_email(body["email"]):
                raise invalid_input("Invalid email format", field="email")
            changes["email"] = body["email"]
        for key, attr in (("firstName", "first_name"), ("lastName", "last_name")):
            value = _string_field(body, key, max_length=NAME_MAX)
            if key in body:
                changes[attr] = value
        changes.update(_contact_extras(body))
        contact = resolve_contact_param(self, id_or_email)
        try:
            contact, _ = contact_update(contact=contact, changes=changes, actor=self.actor)
        except ContactAlreadyExists as exc:
            raise already_exists(f"A contact with this email already exists: {exc.email}")
        return self.ok(contact_data(contact))

    @extend_schema(summary="Erase a contact permanently (API-17)", responses={200: dict})
    def delete(self, request, id_or_email: str):
        from owlat.contacts import contact_erase

        contact = resolve_contact_param(self, id_or_email)
        contact_id = contact_erase(contact=contact, actor=self.actor)
        return self.deleted(contact_id)


# --- topic membership (API-19/20) ------------------------------------------------------------------------


class TopicContactsView(ApiView):
    scopes = {"GET": "topics:read", "POST": "topics:write"}

    @extend_schema(
        summary="List topic members (API-25)", parameters=LIST_PARAMETERS[:2], responses={200: dict}
    )
    def get(self, request, topic_id: str):
        topic = _topic(self, require_uuid(topic_id, "topic"))
        queryset = ContactTopic.objects.filter(
            organization_id=self.organization_id, topic=topic, contact__deleted_at__isnull=True
        ).select_related("contact")
        return self.paginated(
            queryset, topic_member_data, order=("-added_at", "-id"), list_key=f"topics/{topic.pk}/contacts"
        )

    @extend_schema(summary="Add a contact to a topic (API-19)", request=dict, responses={201: dict})
    def post(self, request, topic_id: str):
        from owlat.contacts import is_valid_email, live_contacts, normalize_email
        from owlat.topics import PENDING_DOI, topic_subscribe

        topic_pk = require_uuid(topic_id, "topic")
        body = self.body()
        email, contact_id = body.get("email"), body.get("contactId")
        if email is None and contact_id is None:
            raise invalid_input("Either email or contactId is required")
        if email is not None and (not isinstance(email, str) or not is_valid_email(email)):
            raise invalid_input("Invalid email format", field="email")
        contact_pk = None
        if contact_id is not None:
            contact_pk = parse_uuid(contact_id) if isinstance(contact_id, str) else None
            if contact_pk is None:
                raise invalid_input("Invalid contactId format", field="contactId")
        topic = _topic(self, topic_pk)
        contacts = live_contacts(self.organization_id)
        if contact_pk is not None:
            contact = contacts.filter(pk=contact_pk).first()
            if contact is None:
                raise not_found("Contact not found")
        else:
            address = normalize_email(email)
            contact = contacts.filter(email=address).first()
            if contact is None:
                raise not_found(f'Contact with email "{address}" not found')
        outcome = topic_subscribe(
            contact=contact,
            topic=topic,
            source="public_api",
            actor=self.actor,
            consent_ip=_client_ip(request._request),
            consent_user_agent=request._request.headers.get("User-Agent"),
        )
        contact.refresh_from_db(fields=["doi_status"])
        doi_status = "pending" if outcome == PENDING_DOI else contact.doi_status
        return self.created(
            {"success": True, "contactId": str(contact.pk), "topicId": str(topic.pk), "doiStatus": doi_status}
        )


class TopicContactDeleteView(ApiView):
    required_scope = "topics:write"

    @extend_schema(summary="Remove a contact from a topic (API-20)", responses={200: dict})
    def delete(self, request, topic_id: str, email_or_id: str):
        from owlat.contacts import is_valid_email, normalize_email
        from owlat.topics import topic_unsubscribe

        topic_pk = require_uuid(topic_id, "topic")
        # API-09 format errors first, then the topic, then the contact.
        if _path_has_malformed_escape(request._request):
            raise invalid_input(INVALID_CONTACT_PARAM)
        by_email = is_valid_email(email_or_id)
        if not by_email and (parse_uuid(email_or_id) is None or "@" in email_or_id):
            raise invalid_input(INVALID_CONTACT_PARAM)
        topic = _topic(self, topic_pk)
        try:
            contact = resolve_contact_param(self, email_or_id)
        except ApiError as exc:
            if by_email and exc.status == 404:
                raise not_found(f'Contact with email "{normalize_email(email_or_id)}" not found')
            raise
        removed = topic_unsubscribe(contact=contact, topic=topic, source="public_api", actor=self.actor)
        return self.ok({"success": True, "removed": removed})


# --- topics (API-25) ---------------------------------------------------------------------------------------


def _topic_fields(body: dict[str, Any], *, creating: bool) -> dict[str, Any]:
    _read_only(body, "memberCount")
    fields: dict[str, Any] = {}
    if creating and "name" not in body:
        raise invalid_input("name is required", field="name")
    if "name" in body:
        name = _string_field(body, "name", max_length=NAME_MAX)
        if not name or not name.strip():
            raise invalid_input("name is required", field="name")
        fields["name"] = name.strip()
    if "description" in body:
        fields["description"] = _string_field(body, "description")
    if "displayOrder" in body:
        fields["display_order"] = _int_field(body, "displayOrder")
    if "isDefault" in body:
        fields["is_default"] = _bool_field(body, "isDefault")
    if "requireDoubleOptIn" in body:
        fields["require_double_opt_in"] = _bool_field(body, "requireDoubleOptIn")
    return fields


class TopicListView(ApiView):
    scopes = {"GET": "topics:read", "POST": "topics:manage"}

    @extend_schema(
        operation_id="topics_list",
        summary="List topics (API-25)",
        parameters=LIST_PARAMETERS,
        responses={200: dict},
    )
    def get(self, request):
        queryset = Topic.objects.filter(organization_id=self.organization_id)
        term = self.search_term()
        if term:
            queryset = queryset.filter(name__icontains=term)
        return self.paginated(queryset, topic_data, order=("-created_at", "-id"), list_key="topics")

    @extend_schema(summary="Create a topic (API-25)", request=dict, responses={201: dict})
    def post(self, request):
        from owlat.topics import topic_create

        fields = _topic_fields(self.body(), creating=True)
        topic = topic_create(organization_id=self.organization_id, actor=self.actor, **fields)
        return self.created(topic_data(topic))


class TopicDetailView(ApiView):
    scopes = {
        "GET": "topics:read",
        "PUT": "topics:manage",
        "PATCH": "topics:manage",
        "DELETE": "topics:manage",
    }

    @extend_schema(summary="Get a topic (API-25)", responses={200: dict})
    def get(self, request, topic_id: str):
        return self.ok(topic_data(_topic(self, require_uuid(topic_id, "topic"))))

    @extend_schema(summary="Update a topic (API-25)", request=dict, responses={200: dict})
    def put(self, request, topic_id: str):
        from owlat.topics import topic_update

        topic_pk = require_uuid(topic_id, "topic")
        fields = _topic_fields(self.body(), creating=False)
        topic = topic_update(topic=_topic(self, topic_pk), changes=fields)
        return self.ok(topic_data(topic))

    patch = put

    @extend_schema(summary="Delete a topic (API-25)", responses={200: dict})
    def delete(self, request, topic_id: str):
        from owlat.topics import topic_delete

        topic = _topic(self, require_uuid(topic_id, "topic"))
        used_by = topic_in_use(self.organization_id, topic.pk)
        if used_by:
            raise invalid_state(
                "Topic is in use by a campaign or automation and cannot be deleted",
                "topic_in_use",
                usedBy=used_by,
            )
        topic_id_str = str(topic.pk)
        topic_delete(topic=topic)
        return self.deleted(topic_id_str)


# --- segments (API-25) -------------------------------------------------------------------------------------


def _validate_filters(view: ApiView, filters: Any) -> dict[str, Any]:
    """AUT-34 via `owlat.conditions.parse_filters`; errors name `filters.<path>`; topic ids must be ours."""
    from owlat.conditions import ConditionError, TopicCondition, parse_filters

    try:
        parsed = parse_filters(filters)
    except ConditionError as exc:
        field = f"filters.{exc.field}" if exc.field else "filters"
        raise invalid_input(exc.message, field=field)
    for index, condition in enumerate(parsed.conditions):
        if isinstance(condition, TopicCondition):
            topic_pk = parse_uuid(condition.topic_id)
            if (
                topic_pk is None
                or not Topic.objects.filter(organization_id=view.organization_id, pk=topic_pk).exists()
            ):
                raise invalid_input("Topic not found", field=f"filters.conditions[{index}].topicId")
    return parsed.to_dict()


def _segment_fields(view: ApiView, body: dict[str, Any], *, creating: bool) -> dict[str, Any]:
    _read_only(body, "cachedCount")
    fields: dict[str, Any] = {}
    if creating and "name" not in body:
        raise invalid_input("name is required", field="name")
    if "name" in body:
        name = _string_field(body, "name", max_length=NAME_MAX)
        if not name or not name.strip():
            raise invalid_input("name is required", field="name")
        fields["name"] = name.strip()
    if "description" in body:
        fields["description"] = _string_field(body, "description")
    if "filters" in body:
        fields["filters"] = _validate_filters(view, body["filters"])
    return fields


class SegmentListView(ApiView):
    scopes = {"GET": "segments:read", "POST": "segments:write"}

    @extend_schema(
        operation_id="segments_list",
        summary="List segments (API-25)",
        parameters=LIST_PARAMETERS,
        responses={200: dict},
    )
    def get(self, request):
        queryset = Segment.objects.filter(organization_id=self.organization_id)
        term = self.search_term()
        if term:
            queryset = queryset.filter(name__icontains=term)
        return self.paginated(queryset, segment_data, order=("-created_at", "-id"), list_key="segments")

    @extend_schema(summary="Create a segment (API-25)", request=dict, responses={201: dict})
    def post(self, request):
        from owlat.segments import segment_create

        fields = _segment_fields(self, self.body(), creating=True)
        segment = segment_create(organization_id=self.organization_id, actor=self.actor, **fields)
        return self.created(segment_data(segment))


class SegmentDetailView(ApiView):
    scopes = {
        "GET": "segments:read",
        "PUT": "segments:write",
        "PATCH": "segments:write",
        "DELETE": "segments:write",
    }

    @extend_schema(summary="Get a segment (API-25)", responses={200: dict})
    def get(self, request, segment_id: str):
        return self.ok(segment_data(_segment(self, require_uuid(segment_id, "segment"))))

    @extend_schema(summary="Update a segment (API-25)", request=dict, responses={200: dict})
    def put(self, request, segment_id: str):
        from owlat.segments import segment_update

        segment_pk = require_uuid(segment_id, "segment")
        fields = _segment_fields(self, self.body(), creating=False)
        segment = segment_update(segment=_segment(self, segment_pk), changes=fields)
        return self.ok(segment_data(segment))

    patch = put

    @extend_schema(summary="Delete a segment (API-25)", responses={200: dict})
    def delete(self, request, segment_id: str):
        from owlat.segments import segment_delete

        segment = _segment(self, require_uuid(segment_id, "segment"))
        used_by = segment_in_use(self.organization_id, segment.pk)
        if used_by:
            raise invalid_state(
                "Segment is in use by a campaign or automation and cannot be deleted",
                "segment_in_use",
                usedBy=used_by,
            )
        segment_id_str = str(segment.pk)
        segment_delete(segment=segment)
        return self.deleted(segment_id_str)


class SegmentContactsView(ApiView):
    required_scope = "segments:read"

    @extend_schema(
        summary="List a segment's contacts (API-25)", parameters=LIST_PARAMETERS[:2], responses={200: dict}
    )
    def get(self, request, segment_id: str):
        from owlat.conditions import filters_queryset_safe

        segment = _segment(self, require_uuid(segment_id, "segment"))
        queryset = filters_queryset_safe(self.organization_id, segment.filters)
        return self.paginated(
            queryset, contact_data, order=("-created_at", "-id"), list_key=f"segments/{segment.pk}/contacts"
        )
