"""The condition language (spec AUT-34, DOM-09), implemented once in two forms with the same semantics.

* `language`: `parse_condition` / `parse_filters` turn the persisted JSON into typed dataclasses (or raise
  `ConditionError(message, field)` with a dotted field path such as `conditions[0].operator`).
* `values`: the JavaScript value semantics below, shared by both forms.
* `evaluate`: `evaluate_condition` / `evaluate_filters` decide for one contact in Python (automation condition
  steps).
* `sql`: `condition_q` / `filters_queryset` compile the same conditions to a Django `Q` over the contacts of one
  organization (segments, campaign audiences). They use only portable Django expressions (Case/When, Lower,
  Coalesce, regex lookups, Cast, Exists), so they run on PostgreSQL and SQLite (D-16).

Segments (saved filters with a cached count) live in `owlat.segments`. Import the public names from this package.

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

from typing import Any

from owlat.conditions.evaluate import (
    contact_property_values,
    contact_topic_ids,
    evaluate_condition,
    evaluate_filters,
)
from owlat.conditions.language import (
    ABSENT,
    ACTIVITY_FIELDS,
    ACTIVITY_OPERATORS,
    BUILTIN_FIELDS,
    CAMPAIGN_ACTIVITIES,
    KINDS,
    LOGICS,
    OPERATOR_ALIASES,
    PROPERTY_OPERATORS,
    TOPIC_OPERATORS,
    ActivityCondition,
    CampaignActivityCondition,
    CampaignLinkCondition,
    Condition,
    ConditionError,
    Filters,
    PropertyCondition,
    Scalar,
    SignupFormCondition,
    TopicCondition,
    canonicalize_condition,
    canonicalize_filters,
    normalize_topic_id,
    parse_condition,
    parse_filters,
)
from owlat.conditions.sql import (
    condition_q,
    filters_count,
    filters_q,
    filters_queryset,
    filters_queryset_safe,
    live_contacts_queryset,
)
from owlat.conditions.values import (
    JS_WHITESPACE,
    compare_values,
    js_number_to_string,
    js_to_number,
    js_to_string,
)

__all__ = [
    "ABSENT",
    "ACTIVITY_FIELDS",
    "ACTIVITY_OPERATORS",
    "BUILTIN_FIELDS",
    "CAMPAIGN_ACTIVITIES",
    "JS_WHITESPACE",
    "KINDS",
    "LOGICS",
    "OPERATOR_ALIASES",
    "PROPERTY_OPERATORS",
    "TOPIC_OPERATORS",
    "ActivityCondition",
    "CampaignActivityCondition",
    "CampaignLinkCondition",
    "Condition",
    "ConditionError",
    "Filters",
    "PropertyCondition",
    "Scalar",
    "SignupFormCondition",
    "TopicCondition",
    "canonicalize_condition",
    "canonicalize_filters",
    "compare_values",
    "condition_q",
    "contact_property_values",
    "contact_topic_ids",
    "evaluate_condition",
    "evaluate_filters",
    "filters_count",
    "filters_q",
    "filters_queryset",
    "filters_queryset_safe",
    "js_number_to_string",
    "js_to_number",
    "js_to_string",
    "live_contacts_queryset",
    "normalize_topic_id",
    "parse_condition",
    "parse_filters",
]

#: Moved to `owlat.segments`; still resolvable here for tasks queued (or schedules stored) under the old path.
_MOVED_TO_SEGMENTS = ("segment_queryset", "segment_count_refresh", "segment_counts_refresh_task")


def __getattr__(name: str) -> Any:
    if name in _MOVED_TO_SEGMENTS:
        from owlat import segments

        return getattr(segments, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
