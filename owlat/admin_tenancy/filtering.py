"""How tenant rows reach their organization, and filtering querysets and forms by it (D-12, DOM-01)."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib.auth import get_user_model
from django.core.exceptions import FieldDoesNotExist
from django.db import models
from django.http import HttpRequest

from owlat.admin_tenancy.access import get_tenancy
from owlat.models import Organization

# Models whose organization is reached through a relation rather than an `organization` field.
_TENANT_LOOKUPS: dict[type[models.Model], str] = {}


def register_tenant_lookup(model: type[models.Model], lookup: str) -> None:
    """Declare how `model` reaches its organization, e.g. `register_tenant_lookup(Attempt, "delivery__organization")`.

    Models with a direct `organization` foreign key need no registration.
    """
    _TENANT_LOOKUPS[model] = lookup


def tenant_lookup_for(model: type[models.Model]) -> str | None:
    """The ORM lookup from `model` to its Organization: "pk" for Organization itself, None if not a tenant model."""
    if model is Organization or (model._meta.concrete_model is Organization):
        return "pk"
    if model in _TENANT_LOOKUPS:
        return _TENANT_LOOKUPS[model]
    try:
        f = model._meta.get_field("organization")
    except FieldDoesNotExist:
        return None
    if f.is_relation and f.related_model is Organization:
        return "organization"
    return None


def has_direct_organization(model: type[models.Model]) -> bool:
    return tenant_lookup_for(model) == "organization"


# --- filtering ----------------------------------------------------------------------------------------------


def tenant_filter(request: HttpRequest, qs: models.QuerySet, lookup: str | None = None) -> models.QuerySet:
    """Filter `qs` to the active organization of `request` (everything for platform staff in "all" mode).

    Models that are not tenant rows pass unchanged, except users, which members see only within the active
    organization.
    """
    tenancy = get_tenancy(request)
    model = qs.model
    lookup = lookup or tenant_lookup_for(model)
    if lookup is None:
        if issubclass(model, get_user_model()) and not tenancy.sees_everything:
            if tenancy.is_platform_staff and tenancy.organization is None:
                return qs
            if tenancy.organization is None:
                return qs.none()
            return qs.filter(memberships__organization_id=tenancy.organization_id).distinct()
        return qs
    if tenancy.sees_everything:
        return qs
    if tenancy.organization is None:
        return qs.none()
    return qs.filter(**{lookup: tenancy.organization_id})


def _filter_by_org_id(qs: models.QuerySet, org_id: Any) -> models.QuerySet:
    lookup = tenant_lookup_for(qs.model)
    if lookup is None or org_id is None:
        return qs
    return qs.filter(**{lookup: org_id})


def _object_org_id(obj: Any) -> Any:
    if obj is None:
        return None
    if isinstance(obj, Organization):
        return obj.pk
    if hasattr(obj, "organization_id"):
        return obj.organization_id
    lookup = tenant_lookup_for(type(obj))
    if lookup is None:
        return None
    target: Any = obj
    for part in lookup.split("__"):
        if part == "organization":
            return getattr(target, "organization_id", None)
        target = getattr(target, part, None)
        if target is None:
            return None
    return getattr(target, "pk", None)


def restrict_form_to_organization(form: forms.BaseForm, org_id: Any) -> None:
    """Limit every model-choice field of `form` to rows of organization `org_id`."""
    if org_id is None:
        return
    for f in form.fields.values():
        if isinstance(f, forms.ModelChoiceField) and f.queryset is not None:
            f.queryset = _filter_by_org_id(f.queryset, org_id)


def cross_organization_errors(cleaned_data: dict[str, Any], org_id: Any) -> dict[str, str]:
    """DOM-01: references across organizations are rejected. Returns {field: message}."""
    errors: dict[str, str] = {}
    if org_id is None:
        return errors
    for name, value in cleaned_data.items():
        if name == "organization":
            continue
        values = (
            list(value)
            if isinstance(value, models.QuerySet | list | tuple) and not isinstance(value, str)
            else [value]
        )
        for item in values:
            if isinstance(item, models.Model) and not isinstance(item, Organization):
                item_org = _object_org_id(item)
                if item_org is not None and str(item_org) != str(org_id):
                    errors[name] = "Select an item of the same organization."
                    break
    return errors
