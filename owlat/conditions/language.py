"""The condition language's shape (AUT-34, DOM-09): vocabulary, typed conditions, parsing and validation.

`parse_condition` / `parse_filters` turn the persisted JSON into typed dataclasses or raise
`ConditionError(message, field)` with a dotted field path such as `conditions[0].operator`;
`canonicalize_*` accept the editor's operator aliases and return the canonical dict to store.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

KINDS = (
    "contact_property",
    "email_activity",
    "topic_membership",
    "signup_form",
    "campaign_activity",
    "campaign_link",
)
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
#: what a contact did with one campaign: got it (a send row that left for the provider), opened it, clicked in it
CAMPAIGN_ACTIVITIES = ("received", "opened", "clicked")
MAX_LINK_LENGTH = 2000
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
ACTIVITY_COLUMNS = {"opened": "has_opened", "clicked": "has_clicked"}

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


@dataclass(frozen=True)
class SignupFormCondition:
    """The contact joined through this sign-up form (its submission was confirmed or joined at once)."""

    form_id: str
    operator: Literal["equals", "not_equals"]
    kind: Literal["signup_form"] = "signup_form"

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "formId": self.form_id, "operator": self.operator}


@dataclass(frozen=True)
class CampaignActivityCondition:
    """The contact received / opened / clicked in one campaign (`field`), or did not (`is_false`)."""

    campaign_id: str
    field: Literal["received", "opened", "clicked"]
    operator: Literal["is_true", "is_false"]
    kind: Literal["campaign_activity"] = "campaign_activity"

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "campaignId": self.campaign_id,
            "field": self.field,
            "operator": self.operator,
        }


@dataclass(frozen=True)
class CampaignLinkCondition:
    """The contact clicked the link `url` (exactly) in one campaign, or did not."""

    campaign_id: str
    url: str
    operator: Literal["is_true", "is_false"]
    kind: Literal["campaign_link"] = "campaign_link"

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "campaignId": self.campaign_id, "url": self.url, "operator": self.operator}


Condition = (
    PropertyCondition
    | ActivityCondition
    | TopicCondition
    | SignupFormCondition
    | CampaignActivityCondition
    | CampaignLinkCondition
)
CONDITION_TYPES = (
    PropertyCondition,
    ActivityCondition,
    TopicCondition,
    SignupFormCondition,
    CampaignActivityCondition,
    CampaignLinkCondition,
)


@dataclass(frozen=True)
class Filters:
    logic: Literal["AND", "OR"]
    conditions: tuple[Condition, ...]

    def to_dict(self) -> dict[str, Any]:
        return {"logic": self.logic, "conditions": [c.to_dict() for c in self.conditions]}


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

    if kind in ("campaign_activity", "campaign_link"):
        return _parse_campaign_condition(obj, kind, operator, prefix)

    if kind == "signup_form":
        form_id = obj.get("formId")
        if not isinstance(form_id, str) or not form_id or len(form_id) > 64:
            raise ConditionError("formId must be a sign-up form's id.", _path(prefix, "formId"))
        if operator not in TOPIC_OPERATORS:
            raise ConditionError(f"Unknown operator {operator!r} for signup_form.", _path(prefix, "operator"))
        return SignupFormCondition(form_id=form_id, operator=operator)

    topic_id = obj.get("topicId")
    if not isinstance(topic_id, str) or not topic_id:
        raise ConditionError("topicId must be a non-empty string.", _path(prefix, "topicId"))
    if operator not in TOPIC_OPERATORS:
        raise ConditionError(
            f"Unknown operator {operator!r} for topic_membership.", _path(prefix, "operator")
        )
    return TopicCondition(topic_id=topic_id, operator=operator)


def _parse_campaign_condition(obj: Mapping[str, Any], kind: str, operator: Any, prefix: str) -> Condition:
    campaign_id = obj.get("campaignId")
    if not isinstance(campaign_id, str) or not campaign_id or len(campaign_id) > 64:
        raise ConditionError("campaignId must be a campaign's id.", _path(prefix, "campaignId"))
    if operator not in ACTIVITY_OPERATORS:
        raise ConditionError(f"Unknown operator {operator!r} for {kind}.", _path(prefix, "operator"))
    if kind == "campaign_link":
        url = obj.get("url")
        if not isinstance(url, str) or not url or len(url) > MAX_LINK_LENGTH:
            raise ConditionError(
                f"url must be the link's address (at most {MAX_LINK_LENGTH} characters).",
                _path(prefix, "url"),
            )
        return CampaignLinkCondition(campaign_id=campaign_id, url=url, operator=operator)
    field = obj.get("field")
    if field not in CAMPAIGN_ACTIVITIES:
        raise ConditionError(
            'Campaign activity field must be "received", "opened" or "clicked".', _path(prefix, "field")
        )
    return CampaignActivityCondition(campaign_id=campaign_id, field=field, operator=operator)


def parse_condition(obj: Any, *, allow_aliases: bool = False) -> Condition:
    """Parse one stored condition (canonical operators only unless `allow_aliases`)."""
    if isinstance(obj, CONDITION_TYPES):
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


def normalize_topic_id(topic_id: str) -> str | None:
    """The canonical form of a topic id, None when it is no UUID (such a condition matches no topic)."""
    try:
        return str(uuid.UUID(topic_id))
    except (ValueError, AttributeError, TypeError):
        return None
