"""Organizations and their settings row (DOM-01, DOM-14)."""

from __future__ import annotations

import uuid
from typing import Any

from django.db import connection, transaction

from owlat.flags import default_flags
from owlat.models import Membership, Organization, OrganizationSettings, Role


def organization_create(*, name: str, owner: Any = None, **settings_fields: Any) -> Organization:
    with transaction.atomic():
        org = Organization.objects.create(name=name)
        OrganizationSettings.objects.create(
            organization=org, feature_flags=default_flags(), **settings_fields
        )
        if owner is not None:
            Membership.objects.create(user=owner, organization=org, role=Role.OWNER)
    return org


def organization_settings(organization_id: Any) -> OrganizationSettings:
    """The organization's settings row, created with the flag defaults on first use. Read on every walker batch
    with an email step, every transactional send and more: on PostgreSQL the read is one prepared statement (no
    ORM compilation, planned once per connection); the ORM's `get_or_create` when the row is missing and on
    other databases."""
    if connection.vendor == "postgresql" and (key := _uuid(organization_id)) is not None:
        from owlat.sql import prepared_models

        rows = prepared_models(OrganizationSettings, "organization_id = %s", [key])
        if rows:
            return rows[0]
    obj, _ = OrganizationSettings.objects.get_or_create(
        organization_id=organization_id, defaults={"feature_flags": default_flags()}
    )
    return obj


def _uuid(value: Any) -> uuid.UUID | None:
    if isinstance(value, uuid.UUID):
        return value
    try:
        return uuid.UUID(str(value))
    except ValueError:
        return None  # the ORM's form raises its own error for it
