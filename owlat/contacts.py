"""Contacts (DOM-05, DOM-06, DOM-07): the single find-or-create path, edits, erasure and lookups."""

from __future__ import annotations

import uuid
from typing import Any, Literal

from django.core.exceptions import ValidationError
from django.core.validators import EmailValidator
from django.db import IntegrityError, transaction
from django.db.models import F, QuerySet
from django.utils import timezone

from owlat.models import (
    Contact,
    ContactIdentity,
    ContactProperty,
    ContactPropertyValue,
    ContactTopic,
    IdentityChannel,
    Topic,
)

MAX_EMAIL_LENGTH = 254
_email_validator = EmailValidator()

# Built-in fields whose changes fire `contact_updated` (AUT-16), by model field → reported name.
WATCHED_FIELDS = {
    "email": "email",
    "first_name": "firstName",
    "last_name": "lastName",
    "timezone": "timezone",
    "language": "language",
}
EDITABLE_FIELDS = (*WATCHED_FIELDS, "notes")


class ContactAlreadyExists(Exception):
    def __init__(self, email: str) -> None:
        super().__init__(email)
        self.email = email


def normalize_email(email: str) -> str:
    return email.strip().lower()


def is_valid_email(email: Any) -> bool:
    if not isinstance(email, str) or not email or len(email.strip()) > MAX_EMAIL_LENGTH:
        return False
    try:
        _email_validator(email.strip())
    except ValidationError:
        return False
    return True


def live_contacts(organization_id: Any) -> QuerySet[Contact]:
    return Contact.objects.filter(organization_id=organization_id, deleted_at__isnull=True)


def contact_lookup(*, organization_id: Any, id_or_email: str) -> Contact | None:
    """A live contact of the organization by email (case-insensitive) or by id."""
    value = id_or_email.strip()
    if "@" in value:
        return live_contacts(organization_id).filter(email=normalize_email(value)).first()
    try:
        pk = uuid.UUID(value)
    except ValueError:
        return None
    return live_contacts(organization_id).filter(pk=pk).first()


def contact_payload(contact: Contact) -> dict[str, Any]:
    """The contact as sent in customer webhooks (the API's contact object)."""
    return {
        "id": str(contact.pk),
        "email": contact.email,
        "firstName": contact.first_name,
        "lastName": contact.last_name,
        "source": contact.source,
        "createdAt": contact.created_at.isoformat() if contact.created_at else None,
    }


def _on_created(contact: Contact, *, actor: str) -> None:
    """DOM-06 effects of a real insert, inside the creating transaction."""
    from owlat.activities import activity_record
    from owlat.analytics import capture
    from owlat.audit import audit_write
    from owlat.triggers import fire_trigger
    from owlat.webhooks import webhook_emit

    activity_record(
        organization_id=contact.organization_id,
        contact_id=contact.pk,
        activity_type="created",
        metadata={"source": contact.source},
    )
    audit_write(
        organization_id=contact.organization_id,
        actor=actor,
        action="contact.created",
        resource="contact",
        resource_id=str(contact.pk),
        details={"source": contact.source},
    )
    if contact.email:
        webhook_emit(
            organization_id=contact.organization_id,
            event_type="contact.created",
            payload=contact_payload(contact),
        )
    capture(
        distinct_id=actor,
        event="contact_created",
        properties={"contactId": str(contact.pk), "source": contact.source},
    )
    fire_trigger("contact_created", organization_id=contact.organization_id, contact_id=contact.pk)


def contact_find_or_create(
    *,
    organization_id: Any,
    email: str | None,
    source: str,
    actor: str,
    mode: Literal["strict", "upsert", "merge"] = "upsert",
    first_name: str | None = None,
    last_name: str | None = None,
    language: str | None = None,
    timezone: str | None = None,
    properties: dict[str, Any] | None = None,
    fire: bool = True,
) -> tuple[Contact, bool]:
    """The single find-or-create (DOM-06). Returns (contact, created).

    `strict` raises ContactAlreadyExists when a live contact has the email; `upsert` returns it; `merge`
    fills its empty fields from the given values. `fire=False` (bulk import) skips the creation effects.
    """
    address = normalize_email(email) if email else None
    fields = {"first_name": first_name, "last_name": last_name, "language": language, "timezone": timezone}
    with transaction.atomic():
        existing = (
            live_contacts(organization_id).select_for_update().filter(email=address).first()
            if address
            else None
        )
        if existing is None:
            try:
                with transaction.atomic():
                    contact = Contact.objects.create(
                        organization_id=organization_id, email=address, source=source, **fields
                    )
                    if address:
                        # get-or-create in one statement (INSERT … ON CONFLICT DO NOTHING): an existing
                        # identity is kept, as before.
                        ContactIdentity.objects.bulk_create(
                            [
                                ContactIdentity(
                                    organization_id=organization_id,
                                    channel=IdentityChannel.EMAIL,
                                    identifier=address,
                                    contact=contact,
                                )
                            ],
                            ignore_conflicts=True,
                        )
            except IntegrityError:
                existing = live_contacts(organization_id).select_for_update().filter(email=address).first()
                if existing is None:
                    raise
            else:
                if properties:
                    contact_set_properties(contact=contact, properties=properties)
                if fire:
                    _on_created(contact, actor=actor)
                return contact, True
        if mode == "strict":
            raise ContactAlreadyExists(address or "")
        if mode == "merge":
            fill = {k: v for k, v in fields.items() if v not in (None, "") and not getattr(existing, k)}
            if fill:
                existing, _ = contact_update(contact=existing, changes=fill, actor=actor)
            if properties:
                contact_set_properties(contact=existing, properties=properties)
        return existing, False


def contact_set_properties(*, contact: Contact, properties: dict[str, Any]) -> list[str]:
    """Store custom property values as strings (DOM-07); unknown keys get a `string` definition. Returns changed keys."""
    changed: list[str] = []
    for key, value in properties.items():
        prop, _ = ContactProperty.objects.get_or_create(organization_id=contact.organization_id, key=str(key))
        if value is None:
            deleted, _ = ContactPropertyValue.objects.filter(contact=contact, property=prop).delete()
            if deleted:
                changed.append(str(key))
            continue
        text = _property_string(value)
        row, created = ContactPropertyValue.objects.get_or_create(
            contact=contact,
            property=prop,
            defaults={"organization_id": contact.organization_id, "value": text},
        )
        if created:
            changed.append(str(key))
        elif row.value != text:
            row.value = text
            row.save(update_fields=["value", "updated_at"])
            changed.append(str(key))
    return changed


def _property_string(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def contact_property_values(contact: Contact) -> dict[str, str]:
    return dict(ContactPropertyValue.objects.filter(contact=contact).values_list("property__key", "value"))


def contact_update(*, contact: Contact, changes: dict[str, Any], actor: str) -> tuple[Contact, list[str]]:
    """Partial update; returns the contact and the changed built-in field names (AUT-16 spelling)."""
    from owlat.audit import audit_write
    from owlat.triggers import fire_trigger

    unknown = set(changes) - {*EDITABLE_FIELDS, "properties"}
    if unknown:
        raise ValueError(f"not editable: {', '.join(sorted(unknown))}")
    with transaction.atomic():
        contact = Contact.objects.select_for_update().get(pk=contact.pk)
        changed_fields: list[str] = []
        update_fields: list[str] = []
        for field in EDITABLE_FIELDS:
            if field not in changes:
                continue
            value = changes[field]
            if field == "email" and value is not None:
                value = normalize_email(value)
                clash = (
                    live_contacts(contact.organization_id).filter(email=value).exclude(pk=contact.pk).exists()
                )
                if clash:
                    raise ContactAlreadyExists(value)
            if getattr(contact, field) != value:
                setattr(contact, field, value)
                update_fields.append(field)
                if field in WATCHED_FIELDS:
                    changed_fields.append(WATCHED_FIELDS[field])
        changed_properties = contact_set_properties(
            contact=contact, properties=changes.get("properties") or {}
        )
        if update_fields or changed_properties:
            contact.save(update_fields=[*update_fields, "updated_at"])
            if "email" in update_fields:
                ContactIdentity.objects.filter(contact=contact, channel=IdentityChannel.EMAIL).delete()
                if contact.email:
                    ContactIdentity.objects.update_or_create(
                        organization_id=contact.organization_id,
                        channel=IdentityChannel.EMAIL,
                        identifier=contact.email,
                        defaults={"contact": contact},
                    )
            audit_write(
                organization_id=contact.organization_id,
                actor=actor,
                action="contact.updated",
                resource="contact",
                resource_id=str(contact.pk),
                details={
                    "changedFields": ",".join(changed_fields),
                    "changedProperties": ",".join(changed_properties),
                },
            )
        if changed_fields:
            fire_trigger(
                "contact_updated",
                organization_id=contact.organization_id,
                contact_id=contact.pk,
                data={"changedFields": changed_fields},
            )
    return contact, changed_fields


def _release_topic_counts(contact: Contact) -> None:
    topic_ids = list(ContactTopic.objects.filter(contact=contact).values_list("topic_id", flat=True))
    if topic_ids:
        Topic.objects.filter(pk__in=topic_ids, cached_member_count__gt=0).update(
            cached_member_count=F("cached_member_count") - 1
        )


def contact_erase(*, contact: Contact, actor: str) -> str:
    """API-17 permanent erasure: the contact and its personal rows go; erasure hooks anonymize what stays."""
    from owlat.audit import audit_write
    from owlat.registry import erasure_hooks

    with transaction.atomic():
        contact = Contact.objects.select_for_update().get(pk=contact.pk)
        contact_id = str(contact.pk)
        for hook in erasure_hooks():
            hook(contact)
        _release_topic_counts(contact)
        contact.delete()
        audit_write(
            organization_id=contact.organization_id,
            actor=actor,
            action="contact.deleted",
            resource="contact",
            resource_id=contact_id,
            details={"erased": True},
        )
    return contact_id


def contact_soft_delete(*, contact: Contact, actor: str) -> None:
    """The UI's delete (DOM-05): the contact becomes invisible to every API and audience."""
    from owlat.audit import audit_write

    with transaction.atomic():
        updated = Contact.objects.filter(pk=contact.pk, deleted_at__isnull=True).update(
            deleted_at=timezone.now()
        )
        if updated:
            _release_topic_counts(contact)
            ContactTopic.objects.filter(contact=contact).delete()
            ContactIdentity.objects.filter(contact=contact).delete()
            audit_write(
                organization_id=contact.organization_id,
                actor=actor,
                action="contact.deleted",
                resource="contact",
                resource_id=str(contact.pk),
                details={"soft": True},
            )
