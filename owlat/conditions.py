"""The condition language (spec AUT-34, DOM-09), implemented once in two forms with the same semantics.

* `parse_condition` / `parse_filters` turn the persisted JSON into typed dataclasses (or raise
  `ConditionError(message, field)` with a dotted field path such as `conditions[0].operator`).
* `evaluate_condition` / `evaluate_filters` decide for one contact in Python (automation condition steps).
* `condition_q` / `filters_queryset` compile the same conditions to a Django `Q` over the contacts of one
  organization (segments, campaign audiences). They use only portable Django expressions (Case/When, Lower,
  Coalesce, regex lookups, Cast, Exists), so they run on PostgreSQL and SQLite (D-16).

Value semantics follow the original's JavaScript:

* string forms (`equals`, `not_equals`, `contains`, `not_contains`) compare lower-cased JS `String()` forms:
  absent/null → `""`, booleans → `"true"`/`"false"`, integral numbers without `.0`;
* numeric forms (`gt`, `lt`, `gte`, `lte`) compare JS `Number()` conversions: absent → NaN, `""` and
  whitespace → 0, `true` → 1, non-numeric text → NaN; any NaN makes the test false;
* `is_empty` is absent/null/`""`; `is_true` / `is_false` match `true` / `"true"` (`false` / `"false"`) exactly.

A contact's built-in fields (`email`, `firstName`, `lastName`, `source`) come from the row; a NULL column reads
as absent. Any other field name is a custom property key: the stored string of that contact's value for the
organization's property with that key, absent when there is none.

Numbers in SQL: values in plain decimal notation of moderate size (the overwhelming majority) are converted
with `Cast` behind a regex guard; the rare remaining numeric-looking values (hex/octal/binary literals,
`Infinity`, huge exponents, exotic whitespace) are read once per compile and converted in Python, so both
forms agree exactly. Known limit: lower-casing non-ASCII text follows the database (PostgreSQL's `lower()`
agrees with Python for common letters; SQLite lower-cases ASCII only).
"""

from __future__ import annotations

import logging
import math
import operator as op
import re
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Literal

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
from django.utils import timezone

from owlat.models import Contact, ContactPropertyValue, ContactTopic, Segment

logger = logging.getLogger(__name__)

# --- vocabulary -----------------------------------------------------------------------------------------

KINDS = ("contact_property", "email_activity", "topic_membership")
PROPERTY_OPERATORS = (
    "equals",
    "not_equals",
    "contains",
    "not_contains",
    "gt",
    "lt",
    "gte",
    "lte",
    "is_empty",
    "not_empty",
    "is_true",
    "is_false",
)
ACTIVITY_OPERATORS = ("is_true", "is_false")
ACTIVITY_FIELDS = ("opened", "clicked")
TOPIC_OPERATORS = ("equals", "not_equals")
LOGICS = ("AND", "OR")
#: Editor aliases (AUT-34); only the canonical value is ever stored.
OPERATOR_ALIASES = {
    "greater_than": "gt",
    "less_than": "lt",
    "is_set": "not_empty",
    "is_not_set": "is_empty",
}
#: Built-in contact fields (camelCase as in the stored condition) → model column.
BUILTIN_FIELDS = {"email": "email", "firstName": "first_name", "lastName": "last_name", "source": "source"}
_ACTIVITY_COLUMNS = {"opened": "has_opened", "clicked": "has_clicked"}

Scalar = str | int | float | bool | None


class ConditionError(ValueError):
    """A condition or filter set that does not parse. `field` is a dotted path (`conditions[0].operator`)."""

    def __init__(self, message: str, field: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.field = field

    def __str__(self) -> str:
        return f"{self.field}: {self.message}" if self.field else self.message


class _Absent:
    """The condition has no `value` key (JS `undefined`)."""

    _instance: _Absent | None = None

    def __new__(cls) -> _Absent:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "ABSENT"

    def __bool__(self) -> bool:
        return False


ABSENT: Any = _Absent()


@dataclass(frozen=True)
class PropertyCondition:
    field: str
    operator: str
    value: Any = ABSENT  # Scalar or ABSENT
    kind: Literal["contact_property"] = "contact_property"

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"kind": self.kind, "field": self.field, "operator": self.operator}
        if self.value is not ABSENT:
            data["value"] = self.value
        return data


@dataclass(frozen=True)
class ActivityCondition:
    field: Literal["opened", "clicked"]
    operator: Literal["is_true", "is_false"]
    kind: Literal["email_activity"] = "email_activity"

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "field": self.field, "operator": self.operator}


@dataclass(frozen=True)
class TopicCondition:
    topic_id: str
    operator: Literal["equals", "not_equals"]
    kind: Literal["topic_membership"] = "topic_membership"

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "topicId": self.topic_id, "operator": self.operator}


Condition = PropertyCondition | ActivityCondition | TopicCondition


@dataclass(frozen=True)
class Filters:
    logic: Literal["AND", "OR"]
    conditions: tuple[Condition, ...]

    def to_dict(self) -> dict[str, Any]:
        return {"logic": self.logic, "conditions": [c.to_dict() for c in self.conditions]}


# --- parsing --------------------------------------------------------------------------------------------


def _path(prefix: str, name: str) -> str:
    return f"{prefix}.{name}" if prefix else name


def _parse_condition(obj: Any, prefix: str, *, allow_aliases: bool) -> Condition:
    if not isinstance(obj, Mapping):
        raise ConditionError("Condition must be an object.", prefix or None)
    kind = obj.get("kind")
    operator = obj.get("operator")
    if kind not in KINDS:
        raise ConditionError(
            f"Unknown condition kind {kind!r}; expected one of {', '.join(KINDS)}.", _path(prefix, "kind")
        )
    if allow_aliases and isinstance(operator, str):
        operator = OPERATOR_ALIASES.get(operator, operator)

    if kind == "contact_property":
        field = obj.get("field")
        if not isinstance(field, str):
            raise ConditionError("Property field must be a string.", _path(prefix, "field"))
        if operator not in PROPERTY_OPERATORS:
            raise ConditionError(
                f"Unknown operator {operator!r} for contact_property.", _path(prefix, "operator")
            )
        value = obj.get("value", ABSENT)
        if value is not ABSENT and value is not None and not isinstance(value, str | int | float | bool):
            raise ConditionError("Value must be a string, number or boolean.", _path(prefix, "value"))
        return PropertyCondition(field=field, operator=operator, value=value)

    if kind == "email_activity":
        field = obj.get("field")
        if field not in ACTIVITY_FIELDS:
            raise ConditionError(
                'Email activity field must be "opened" or "clicked".', _path(prefix, "field")
            )
        if operator not in ACTIVITY_OPERATORS:
            raise ConditionError(
                f"Unknown operator {operator!r} for email_activity.", _path(prefix, "operator")
            )
        return ActivityCondition(field=field, operator=operator)

    topic_id = obj.get("topicId")
    if not isinstance(topic_id, str) or not topic_id:
        raise ConditionError("topicId must be a non-empty string.", _path(prefix, "topicId"))
    if operator not in TOPIC_OPERATORS:
        raise ConditionError(
            f"Unknown operator {operator!r} for topic_membership.", _path(prefix, "operator")
        )
    return TopicCondition(topic_id=topic_id, operator=operator)


def parse_condition(obj: Any, *, allow_aliases: bool = False) -> Condition:
    """Parse one stored condition (canonical operators only unless `allow_aliases`)."""
    if isinstance(obj, PropertyCondition | ActivityCondition | TopicCondition):
        return obj
    return _parse_condition(obj, "", allow_aliases=allow_aliases)


def parse_filters(filters: Any, *, allow_aliases: bool = False) -> Filters:
    """Parse `{"logic": "AND"|"OR", "conditions": [...]}`; error fields are relative (`conditions[0].kind`)."""
    if isinstance(filters, Filters):
        return filters
    if not isinstance(filters, Mapping):
        raise ConditionError("Filters must be an object with logic and conditions.", None)
    logic = filters.get("logic")
    if logic not in LOGICS:
        raise ConditionError('Logic must be "AND" or "OR".', "logic")
    conditions = filters.get("conditions")
    if not isinstance(conditions, list):
        raise ConditionError("Conditions must be a list.", "conditions")
    parsed = tuple(
        _parse_condition(c, f"conditions[{i}]", allow_aliases=allow_aliases) for i, c in enumerate(conditions)
    )
    return Filters(logic=logic, conditions=parsed)


def canonicalize_condition(obj: Any) -> dict[str, Any]:
    """Editor input (aliases allowed) → the canonical dict to store. Raises `ConditionError`."""
    return parse_condition(obj, allow_aliases=True).to_dict()


def canonicalize_filters(filters: Any) -> dict[str, Any]:
    """Editor input (aliases allowed) → the canonical filter dict to store. Raises `ConditionError`."""
    return parse_filters(filters, allow_aliases=True).to_dict()


# --- JavaScript value semantics ---------------------------------------------------------------------------

#: ECMAScript WhiteSpace + LineTerminator (what `String.prototype.trim` and `Number()` strip).
JS_WHITESPACE = (
    "\t\n\v\f\r \u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
    "\u2028\u2029\u202f\u205f\u3000\ufeff"
)
_JS_DECIMAL = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
_JS_RADIX = re.compile(r"0(?:([xX])([0-9a-fA-F]+)|([oO])([0-7]+)|([bB])([01]+))")


def js_to_number(value: Any) -> float:
    """JavaScript `Number(value)`; `ABSENT` is `undefined`."""
    if value is ABSENT:
        return math.nan
    if value is None:
        return 0.0
    if isinstance(value, bool):
        return 1.0 if value else 0.0
    if isinstance(value, int):
        try:
            return float(value)
        except OverflowError:
            return math.inf if value > 0 else -math.inf
    if isinstance(value, float):
        return value
    if not isinstance(value, str):
        return math.nan
    s = value.strip(JS_WHITESPACE)
    if s == "":
        return 0.0
    if s in ("Infinity", "+Infinity"):
        return math.inf
    if s == "-Infinity":
        return -math.inf
    if _JS_DECIMAL.fullmatch(s):
        return float(s)
    m = _JS_RADIX.fullmatch(s)
    if m:
        digits, base = (m.group(2), 16) if m.group(1) else (m.group(4), 8) if m.group(3) else (m.group(6), 2)
        try:
            return float(int(digits, base))
        except OverflowError:
            return math.inf
    return math.nan


def js_number_to_string(x: float) -> str:
    """JavaScript `Number.prototype.toString()` (shortest round-trip digits, JS exponent rules)."""
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "Infinity" if x > 0 else "-Infinity"
    if x == 0:
        return "0"
    sign = "-" if x < 0 else ""
    tup = Decimal(repr(abs(x))).normalize().as_tuple()
    digits = "".join(str(d) for d in tup.digits)
    k = len(digits)
    n = int(tup.exponent) + k
    if k <= n <= 21:
        body = digits + "0" * (n - k)
    elif 0 < n <= 21:
        body = digits[:n] + "." + digits[n:]
    elif -6 < n <= 0:
        body = "0." + "0" * (-n) + digits
    else:
        e = n - 1
        exp = f"e{'+' if e >= 0 else '-'}{abs(e)}"
        body = (digits + exp) if k == 1 else (digits[0] + "." + digits[1:] + exp)
    return sign + body


def js_to_string(value: Any) -> str:
    """JavaScript `String(value)` with absent/null read as `""` (AUT-34)."""
    if value is ABSENT or value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        try:
            return js_number_to_string(float(value))
        except OverflowError:
            return "Infinity" if value > 0 else "-Infinity"
    if isinstance(value, float):
        return js_number_to_string(value)
    return str(value)


_NUMERIC_OPS: dict[str, Callable[[float, float], bool]] = {
    "gt": op.gt,
    "lt": op.lt,
    "gte": op.ge,
    "lte": op.le,
}


def compare_values(operator: str, actual: Any, expected: Any) -> bool:
    """Apply a `contact_property` operator to an actual value (str, None or ABSENT) and the condition value."""
    if operator in ("equals", "not_equals", "contains", "not_contains"):
        a = js_to_string(actual).lower()
        b = js_to_string(expected).lower()
        if operator == "equals":
            return a == b
        if operator == "not_equals":
            return a != b
        if operator == "contains":
            return b in a
        return b not in a
    if operator in _NUMERIC_OPS:
        a_num = js_to_number(actual)
        b_num = js_to_number(expected)
        if math.isnan(a_num) or math.isnan(b_num):
            return False
        return _NUMERIC_OPS[operator](a_num, b_num)
    if operator == "is_empty":
        return actual is ABSENT or actual is None or actual == ""
    if operator == "not_empty":
        return not (actual is ABSENT or actual is None or actual == "")
    if operator == "is_true":
        return actual is True or actual == "true"
    if operator == "is_false":
        return actual is False or actual == "false"
    raise ConditionError(f"Unknown operator {operator!r} for contact_property.", "operator")


# --- evaluation against one contact ----------------------------------------------------------------------


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


def _normalize_topic_id(topic_id: str) -> str | None:
    try:
        return str(uuid.UUID(topic_id))
    except (ValueError, AttributeError, TypeError):
        return None


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
        flag = bool(getattr(contact, _ACTIVITY_COLUMNS[cond.field]))
        return flag if cond.operator == "is_true" else not flag
    wanted = _normalize_topic_id(cond.topic_id)
    if wanted is None:
        member = False
    elif topic_ids is not None:
        member = wanted in {_normalize_topic_id(str(t)) for t in topic_ids}
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


# --- compilation to SQL -----------------------------------------------------------------------------------

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
    compare = _NUMERIC_OPS[operator]
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
    if operator in _NUMERIC_OPS:
        return _numeric_q(operator, col, cond.value)
    stored = Coalesce(col.expr, _TEXT_EMPTY, output_field=TextField())
    if operator == "is_empty":
        return Q(Exact(stored, _TEXT_EMPTY))
    if operator == "not_empty":
        return ~Q(Exact(stored, _TEXT_EMPTY))
    literal = "true" if operator == "is_true" else "false"
    return Q(Exact(stored, Value(literal, output_field=TextField())))


def condition_q(cond: Condition | Mapping[str, Any], organization_id: Any) -> Q:
    """Compile one condition to a `Q` over `Contact` (the caller restricts to the organization's live rows).

    Raises `ConditionError` for a condition that does not parse.
    """
    cond = parse_condition(cond)
    if isinstance(cond, PropertyCondition):
        return _property_q(cond, organization_id)
    if isinstance(cond, ActivityCondition):
        return Q(**{_ACTIVITY_COLUMNS[cond.field]: cond.operator == "is_true"})
    wanted = _normalize_topic_id(cond.topic_id)
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


# --- segments -----------------------------------------------------------------------------------------------


def segment_queryset(segment: Segment, *, warn: bool = False, context: str = "") -> QuerySet[Contact]:
    """The live contacts a segment selects now (corrupt filters → none; `warn` on the send path)."""
    return filters_queryset_safe(
        segment.organization_id, segment.filters, warn=warn, context=context or f"segment {segment.pk}"
    )


def segment_count_refresh(*, segment_id: Any) -> int | None:
    """Recount one segment into `cached_count` (DOM-09); returns the count, None if the segment is gone."""
    segment = Segment.objects.filter(pk=segment_id).first()
    if segment is None:
        return None
    count = segment_queryset(segment).count()
    # update() leaves `updated_at` alone: a recount is not an edit
    Segment.objects.filter(pk=segment.pk).update(cached_count=count, cached_count_at=timezone.now())
    return count


def segment_counts_refresh_task() -> str:
    """Every 30 minutes (DOM-19): refresh the cached count of every segment."""
    ids = list(Segment.objects.order_by("pk").values_list("pk", flat=True))
    refreshed = sum(1 for pk in ids if segment_count_refresh(segment_id=pk) is not None)
    return f"refreshed {refreshed} segment counts"
