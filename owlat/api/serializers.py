"""Wire shapes of the kernel resources (API-05 camelCase, every documented key present)."""

from __future__ import annotations

from typing import Any

from owlat.api.base import iso
from owlat.models import Contact, ContactTopic, Segment, Topic


def contact_data(contact: Contact) -> dict[str, Any]:
    """API-13: exactly the seven keys the SDKs know."""
    return {
        "id": str(contact.pk),
        "email": contact.email,
        "firstName": contact.first_name,
        "lastName": contact.last_name,
        "source": contact.source,
        "createdAt": iso(contact.created_at),
        "updatedAt": iso(contact.updated_at),
    }


def topic_data(topic: Topic) -> dict[str, Any]:
    """API-25 Topic."""
    return {
        "id": str(topic.pk),
        "name": topic.name,
        "description": topic.description,
        "displayOrder": topic.display_order,
        "isDefault": topic.is_default,
        "requireDoubleOptIn": topic.require_double_opt_in,
        "memberCount": topic.cached_member_count,
        "createdAt": iso(topic.created_at),
        "updatedAt": iso(topic.updated_at),
    }


def topic_member_data(membership: ContactTopic) -> dict[str, Any]:
    """API-25 topic member."""
    return {
        "contactId": str(membership.contact_id),
        "email": membership.contact.email,
        "addedAt": iso(membership.added_at),
        "pendingDoiConfirmation": membership.pending_doi_confirmation,
        "doiStatus": membership.contact.doi_status,
    }


def segment_data(segment: Segment) -> dict[str, Any]:
    """API-25 Segment."""
    filters = segment.filters if isinstance(segment.filters, dict) else {}
    return {
        "id": str(segment.pk),
        "name": segment.name,
        "description": segment.description,
        "filters": {"logic": filters.get("logic", "AND"), "conditions": filters.get("conditions", [])},
        "cachedCount": segment.cached_count,
        "createdAt": iso(segment.created_at),
        "updatedAt": iso(segment.updated_at),
    }
