"""Small factories for kernel tests (they call the same services as the product)."""

from __future__ import annotations

import itertools
from typing import Any

from owlat.models import Organization, Topic
from owlat.organizations import organization_create

_seq = itertools.count(1)


def make_org(name: str | None = None, **settings_fields: Any) -> Organization:
    return organization_create(name=name or f"Org {next(_seq)}", **settings_fields)


def make_topic(org: Organization, *, name: str | None = None, doi: bool = False) -> Topic:
    return Topic.objects.create(
        organization=org, name=name or f"Topic {next(_seq)}", require_double_opt_in=doi
    )


def make_contact(org: Organization, email: str | None = None, **kwargs: Any):
    from owlat.contacts import contact_find_or_create

    contact, _ = contact_find_or_create(
        organization_id=org.pk,
        email=email or f"c{next(_seq)}@example.com",
        source=kwargs.pop("source", "api"),
        actor="system:test",
        **kwargs,
    )
    return contact
