"""Organizations and their settings row (DOM-01, DOM-14)."""

from __future__ import annotations

from typing import Any

from django.db import transaction

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
    obj, _ = OrganizationSettings.objects.get_or_create(
        organization_id=organization_id, defaults={"feature_flags": default_flags()}
    )
    return obj
