"""Compiling conditions to a Django `Q` over the contacts of one organization (segments, campaign audiences).

Only portable Django expressions (Case/When, Lower, Coalesce, regex lookups, Cast, Exists), so the same code runs on
PostgreSQL and SQLite (D-16), with the semantics of the Python evaluator (`owlat.conditions.evaluate`).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from django.db.models import (
    BooleanField,
    Case,
    Exists,
    F,
    FloatField,
    OuterRef,
    Q,
    QuerySet,
    Subquery,
    TextField,
    Value,
    When,
)
from django.db.models.functions import Cast, Coalesce, Lower
from django.db.models.lookups import (
    Contains,
    Exact,
    GreaterThan,
    GreaterThanOrEqual,
    In,
    LessThan,
    LessThanOrEqual,
    Regex,
)

from owlat.conditions.language import (
    ACTIVITY_COLUMNS,
    BUILTIN_FIELDS,
    ActivityCondition,
    CampaignActivityCondition,
    CampaignLinkCondition,
    Condition,
    ConditionError,
    Filters,
    PropertyCondition,
    SignupFormCondition,
    normalize_topic_id,
    parse_condition,
    parse_filters,
)
from owlat.conditions.values import NUMERIC_OPS, compare_values, js_to_number, js_to_string
from owlat.models import Contact, ContactPropertyValue, ContactTopic, SignupSubmission

logger = logging.getLogger("owlat.conditions")

# Whitespace every database's float parser skips (C isspace); JS strips a superset (handled as "exotic").
_WS = "[ \\t\\n\\v\\f\\r]*"
_BLANK_RE = f"^{_WS}$"
#: Plain decimals whose CAST can neither overflow nor underflow on PostgreSQL (regex bounds ≤ 255).
_SAFE_DECIMAL_RE = (
    f"^{_WS}[+-]?("
    "[0-9]{1,250}\\.?[0-9]{0,250}|\\.[0-9]{1,250}"
    "|([0-9]{1,100}\\.?[0-9]{0,100}|\\.[0-9]{1,100})[eE][+-]?[0-9]{1,2}"
    f"){_WS}$"
)
#: Everything else that JS might read as a number (or as 0): converted in Python at compile time.
_EXOTIC_RE = (
    "^[^0-9A-Za-z]*("
    "Infinity|0[xXoObB][0-9A-Fa-f]+|([0-9]+\\.?[0-9]*|\\.[0-9]+)([eE][+-]?[0-9]+)?"
    ")?[^0-9A-Za-z]*$"
)

_NEVER = Q(pk__in=[])
_ALWAYS = ~Q(pk__in=[])

_LOOKUPS = {"gt": GreaterThan, "lt": LessThan, "gte": GreaterThanOrEqual, "lte": LessThanOrEqual}
_TEXT_EMPTY = Value("", output_field=TextField())


@dataclass(frozen=True)
class _Column:
    """The SQL side of one field: an expression on Contact (NULL when absent) and where its raw values live."""

    expr: Any
    values: QuerySet  # rows holding this field's values in the organization
    value_field: str

    def distinct_values(self, q: Q) -> list[str]:
        return list(self.values.filter(q).order_by().values_list(self.value_field, flat=True).distinct())

    def regex(self, pattern: str, *, negated: bool = False) -> Q:
        q = Q(**{f"{self.value_field}__regex": pattern})
        return ~q if negated else q


def _column_for(field: str, organization_id: Any) -> _Column:
    column = BUILTIN_FIELDS.get(field)
    if column is not None:
        return _Column(
            expr=F(column), values=Contact.objects.filter(organization_id=organization_id), value_field=column
        )
    values = ContactPropertyValue.objects.filter(
        property__organization_id=organization_id, property__key=field
    )
    expr = Subquery(values.filter(contact_id=OuterRef("pk")).values("value")[:1], output_field=TextField())
    return _Column(expr=expr, values=values, value_field="value")


def _two_valued(q: Q) -> Q:
    """`q` as a boolean that is never NULL (so negating or OR-ing it keeps the JS meaning)."""
    return Q(Exact(Case(When(q, then=Value(True)), default=Value(False), output_field=BooleanField()), True))


def _string_q(operator: str, expr: Any, expected: Any) -> Q:
    lowered = Lower(Coalesce(expr, _TEXT_EMPTY, output_field=TextField()))
    needle = js_to_string(expected).lower()
    if operator in ("equals", "not_equals"):
        q = Q(Exact(lowered, Value(needle, output_field=TextField())))
    else:
        q = Q(Contains(lowered, needle)) if needle else _ALWAYS
    return ~q if operator.startswith("not_") else q


def _numeric_q(operator: str, col: _Column, expected: Any) -> Q:
    x = js_to_number(expected)
    if math.isnan(x):
        return _NEVER
    compare = NUMERIC_OPS[operator]
    parts: list[Q] = []
    if compare(0.0, x):  # blank strings read as 0
        parts.append(Q(Regex(col.expr, _BLANK_RE)))
    number = Case(
        When(Regex(col.expr, _SAFE_DECIMAL_RE), then=Cast(col.expr, FloatField())),
        default=Value(None, output_field=FloatField()),
        output_field=FloatField(),
    )
    if math.isfinite(x):
        parts.append(Q(_LOOKUPS[operator](number, Value(x, output_field=FloatField()))))
    elif compare(0.0, x):  # x is ±Infinity and every finite number passes (e.g. gt -Infinity)
        parts.append(Q(Regex(col.expr, _SAFE_DECIMAL_RE)))
    exotic = [
        v
        for v in col.distinct_values(
            col.regex(_EXOTIC_RE)
            & col.regex(_SAFE_DECIMAL_RE, negated=True)
            & col.regex(_BLANK_RE, negated=True)
        )
        if compare_values(operator, v, expected)
    ]
    if exotic:
        parts.append(Q(In(col.expr, exotic)))
    if not parts:
        return _NEVER
    result = parts[0]
    for part in parts[1:]:
        result |= part
    return _two_valued(result)


def _property_q(cond: PropertyCondition, organization_id: Any) -> Q:
    col = _column_for(cond.field, organization_id)
    operator = cond.operator
    if operator in ("equals", "not_equals", "contains", "not_contains"):
        return _string_q(operator, col.expr, cond.value)
    if operator in NUMERIC_OPS:
        return _numeric_q(operator, col, cond.value)
    stored = Coalesce(col.expr, _TEXT_EMPTY, output_field=TextField())
    if operator == "is_empty":
        return Q(Exact(stored, _TEXT_EMPTY))
    if operator == "not_empty":
        return ~Q(Exact(stored, _TEXT_EMPTY))
    literal = "true" if operator == "is_true" else "false"
    return Q(Exact(stored, Value(literal, output_field=TextField())))


def signup_form_joined(cond: SignupFormCondition, organization_id: Any, contact_id: Any) -> QuerySet | None:
    """The submissions through which the contact joined the form (None when the id is no UUID: no form)."""
    wanted = normalize_topic_id(cond.form_id)
    if wanted is None:
        return None
    return SignupSubmission.objects.filter(
        organization_id=organization_id,
        form_id=wanted,  # type: ignore[misc]  # a form id as text, which the lookup accepts
        contact_id=contact_id,
        confirmed_at__isnull=False,
    )


def campaign_sends(
    cond: CampaignActivityCondition | CampaignLinkCondition, organization_id: Any, contact_id: Any
) -> QuerySet | None:
    """The campaign's send rows of `contact_id` (an id or an `OuterRef`) with the activity the condition names,
    read through the registered source (delivery owns the rows); None when the id is no UUID or no source is
    registered (such a condition matches no campaign)."""
    from owlat.registry import campaign_sends_source

    campaign_id = normalize_topic_id(cond.campaign_id)
    source = campaign_sends_source()
    if campaign_id is None or source is None:
        return None
    if isinstance(cond, CampaignLinkCondition):
        activity, url = "clicked", cond.url
    else:
        activity, url = cond.field, None
    return source(
        organization_id=organization_id,
        campaign_id=campaign_id,
        activity=activity,
        url=url,
        contact_id=contact_id,
    )


def condition_q(cond: Condition | Mapping[str, Any], organization_id: Any) -> Q:
    """Compile one condition to a `Q` over `Contact` (the caller restricts to the organization's live rows).

    Raises `ConditionError` for a condition that does not parse.
    """
    cond = parse_condition(cond)
    if isinstance(cond, PropertyCondition):
        return _property_q(cond, organization_id)
    if isinstance(cond, ActivityCondition):
        return Q(**{ACTIVITY_COLUMNS[cond.field]: cond.operator == "is_true"})
    if isinstance(cond, CampaignActivityCondition | CampaignLinkCondition):
        rows = campaign_sends(cond, organization_id, OuterRef("pk"))
        if rows is None:
            return _NEVER if cond.operator == "is_true" else _ALWAYS
        return Q(Exists(rows)) if cond.operator == "is_true" else ~Q(Exists(rows))
    if isinstance(cond, SignupFormCondition):
        joined = signup_form_joined(cond, organization_id, OuterRef("pk"))
        if joined is None:
            return _NEVER if cond.operator == "equals" else _ALWAYS
        return Q(Exists(joined)) if cond.operator == "equals" else ~Q(Exists(joined))
    wanted = normalize_topic_id(cond.topic_id)
    if wanted is None:
        return _NEVER if cond.operator == "equals" else _ALWAYS
    member = Exists(
        ContactTopic.objects.filter(
            contact_id=OuterRef("pk"), organization_id=organization_id, topic_id=wanted
        )
    )
    return Q(member) if cond.operator == "equals" else ~Q(member)


def filters_q(filters: Filters | Mapping[str, Any], organization_id: Any) -> Q:
    """Compile a filter set to a `Q`; empty conditions match everything."""
    filters = parse_filters(filters)
    if not filters.conditions:
        return Q()
    parts = [condition_q(c, organization_id) for c in filters.conditions]
    result = parts[0]
    for part in parts[1:]:
        result = (result & part) if filters.logic == "AND" else (result | part)
    return result


def live_contacts_queryset(organization_id: Any) -> QuerySet[Contact]:
    return Contact.objects.filter(organization_id=organization_id, deleted_at__isnull=True)


def filters_queryset(organization_id: Any, filters: Filters | Mapping[str, Any]) -> QuerySet[Contact]:
    """Live contacts of the organization matching `filters` (DOM-09). Raises `ConditionError`."""
    return live_contacts_queryset(organization_id).filter(filters_q(filters, organization_id))


def filters_queryset_safe(
    organization_id: Any, filters: Any, *, warn: bool = False, context: str = ""
) -> QuerySet[Contact]:
    """Like `filters_queryset`, but corrupt filters resolve to no contacts (DOM-09).

    Counting and preview call it with `warn=False` (silent); the send path passes `warn=True` and a context
    (e.g. the campaign id) so a warning is logged — the send resolves zero recipients instead of failing.
    """
    try:
        return filters_queryset(organization_id, filters)
    except ConditionError as exc:
        if warn:
            logger.warning("corrupt segment filters %s resolve to zero contacts: %s", context, exc)
        return Contact.objects.none()


def filters_count(organization_id: Any, filters: Any) -> int:
    """How many live contacts match (corrupt filters count zero, silently)."""
    return filters_queryset_safe(organization_id, filters).count()
