"""Deciding conditions for one contact in Python (automation condition steps, AUT-33/34)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from owlat.conditions.language import (
    ABSENT,
    ACTIVITY_COLUMNS,
    BUILTIN_FIELDS,
    ActivityCondition,
    Condition,
    Filters,
    PropertyCondition,
    SignupFormCondition,
    TopicCondition,
    normalize_topic_id,
    parse_condition,
    parse_filters,
)
from owlat.conditions.sql import signup_form_joined
from owlat.conditions.values import compare_values
from owlat.models import Contact, ContactPropertyValue, ContactTopic


def contact_property_values(contact: Contact) -> dict[str, str]:
    """Every custom property value of `contact`, by key (properties of the contact's organization)."""
    return dict(
        ContactPropertyValue.objects.filter(
            contact_id=contact.pk, property__organization_id=contact.organization_id
        ).values_list("property__key", "value")
    )


def contact_topic_ids(contact: Contact) -> set[str]:
    """Ids (strings) of every topic the contact is a member of, DOI-pending memberships included."""
    return {
        str(t)
        for t in ContactTopic.objects.filter(
            contact_id=contact.pk, organization_id=contact.organization_id
        ).values_list("topic_id", flat=True)
    }


def _property_actual(
    cond: PropertyCondition, contact: Contact, property_values: Mapping[str, str] | None
) -> Any:
    column = BUILTIN_FIELDS.get(cond.field)
    if column is not None:
        value = getattr(contact, column)
        return ABSENT if value is None else value
    if property_values is None:
        row = (
            ContactPropertyValue.objects.filter(
                contact_id=contact.pk,
                property__organization_id=contact.organization_id,
                property__key=cond.field,
            )
            .values_list("value", flat=True)
            .first()
        )
        return ABSENT if row is None else row
    return property_values.get(cond.field, ABSENT)


def contact_field_value(contact: Contact, field: str) -> Any:
    """The value a property condition on `field` compares for `contact` (ABSENT when it has none)."""
    return _property_actual(PropertyCondition(field=field, operator="is_empty"), contact, None)


def evaluate_condition(
    cond: Condition | Mapping[str, Any],
    contact: Contact,
    *,
    property_values: Mapping[str, str] | None = None,
    topic_ids: Iterable[str] | None = None,
) -> bool:
    """Decide one condition for one contact (AUT-33/34). Parses dicts first (raises `ConditionError`).

    `property_values` (key → stored string) and `topic_ids` may be passed to avoid queries; otherwise they are
    read from the database.
    """
    cond = parse_condition(cond)
    if isinstance(cond, PropertyCondition):
        return compare_values(cond.operator, _property_actual(cond, contact, property_values), cond.value)
    if isinstance(cond, ActivityCondition):
        flag = bool(getattr(contact, ACTIVITY_COLUMNS[cond.field]))
        return flag if cond.operator == "is_true" else not flag
    if isinstance(cond, SignupFormCondition):
        joined = signup_form_joined(cond, contact.organization_id, contact.pk)
        member = joined is not None and joined.exists()
        return member if cond.operator == "equals" else not member
    wanted = normalize_topic_id(cond.topic_id)
    if wanted is None:
        member = False
    elif topic_ids is not None:
        member = wanted in {normalize_topic_id(str(t)) for t in topic_ids}
    else:
        member = ContactTopic.objects.filter(
            contact_id=contact.pk, organization_id=contact.organization_id, topic_id=wanted
        ).exists()
    return member if cond.operator == "equals" else not member


def evaluate_filters(
    filters: Filters | Mapping[str, Any],
    contact: Contact,
    *,
    property_values: Mapping[str, str] | None = None,
    topic_ids: Iterable[str] | None = None,
) -> bool:
    """Decide a filter set for one contact: empty matches; AND/OR short-circuit (DOM-09)."""
    filters = parse_filters(filters)
    if not filters.conditions:
        return True
    if property_values is None and any(
        isinstance(c, PropertyCondition) and c.field not in BUILTIN_FIELDS for c in filters.conditions
    ):
        property_values = contact_property_values(contact)
    if topic_ids is None and any(isinstance(c, TopicCondition) for c in filters.conditions):
        topic_ids = contact_topic_ids(contact)
    results = (
        evaluate_condition(c, contact, property_values=property_values, topic_ids=topic_ids)
        for c in filters.conditions
    )
    return all(results) if filters.logic == "AND" else any(results)
