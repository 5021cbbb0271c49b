"""Serializer fields and the input serializer base of `/api/v1` (API-05, API-08).

DRF's own fields are lenient where the API is strict: `CharField` turns `5` into `"5"` and trims,
`BooleanField` takes `"yes"`, `IntegerField` takes `"5"`. These subclasses refuse a JSON value of the
wrong type with the spec's messages (`firstName must be a string`, `isDefault must be a boolean`,
`displayOrder must be an integer`, `name must be at most 200 characters`). DRF's validators still refuse
NUL bytes and lone surrogates in every string. `JSONValueField` takes free-form JSON (event properties,
template variables) and refuses, naming the path, what PostgreSQL cannot store: NUL bytes, lone
surrogates, `NaN`/`Infinity` and nesting deeper than `MAX_JSON_DEPTH`.
"""

from __future__ import annotations

import datetime as dt
import math
import threading
from typing import Any, ClassVar

from django.utils.dateparse import parse_datetime
from django.utils.functional import cached_property
from rest_framework import serializers

MAX_JSON_DEPTH = 32


class StringField(serializers.CharField):
    """A JSON string, kept as sent (no trimming unless `trim_whitespace=True`). For the document only
    (owlat.api.schema.StringFieldExtension): `schema_non_blank=True` when a blank value is refused later (by the
    serializer's `validate` or the service, with the spec's message), `schema_pattern` when the value must match
    a regular expression in full, `schema_format` (e.g. `email`) when it has a format checked later."""

    schema_pattern: str | None = None

    def __init__(
        self,
        *,
        schema_non_blank: bool = False,
        schema_pattern: str | None = None,
        schema_format: str | None = None,
        **kwargs: Any,
    ) -> None:
        self.schema_non_blank = schema_non_blank
        self.schema_format = schema_format
        if schema_pattern is not None:
            self.schema_pattern = schema_pattern
        kwargs.setdefault("trim_whitespace", False)
        kwargs.setdefault("allow_blank", True)
        super().__init__(**kwargs)

    def to_internal_value(self, data: Any) -> str:
        if not isinstance(data, str):
            raise serializers.ValidationError(
                self.error_messages.get("type", f"{self.field_name} must be a string")
            )
        # the length as sent, with the spec's message (DRF's MaxLengthValidator stays, for the schema)
        if self.max_length is not None and len(data) > self.max_length:
            raise serializers.ValidationError(
                f"{self.field_name} must be at most {self.max_length} characters"
            )
        return super().to_internal_value(data)


class StrictBooleanField(serializers.BooleanField):
    def to_internal_value(self, data: Any) -> bool:
        if not isinstance(data, bool):
            raise serializers.ValidationError(f"{self.field_name} must be a boolean")
        return data


class StrictIntegerField(serializers.IntegerField):
    """A JSON integer within PostgreSQL's `integer`."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("min_value", -(2**31))
        kwargs.setdefault("max_value", 2**31 - 1)
        super().__init__(**kwargs)

    def to_internal_value(self, data: Any) -> int:
        if isinstance(data, bool) or not isinstance(data, int) or not -(2**31) <= data < 2**31:
            raise serializers.ValidationError(f"{self.field_name} must be an integer")
        return data

    def run_validators(self, value: Any) -> None:  # the range is checked above with the spec's message
        return None


def json_value_problem(value: Any, path: str, depth: int = 0) -> tuple[str, str] | None:
    """(path, message) of the first value PostgreSQL's `jsonb` cannot store, else None."""
    if depth > MAX_JSON_DEPTH:
        return path, f"{path} is nested too deeply (at most {MAX_JSON_DEPTH} levels)"
    if isinstance(value, str):
        return _string_problem(value, path)
    if isinstance(value, float) and not math.isfinite(value):
        return path, f"{path} must be a finite number"
    if isinstance(value, dict):
        for key, item in value.items():
            sub = f"{path}.{key}"
            problem = _string_problem(str(key), sub) or json_value_problem(item, sub, depth + 1)
            if problem:
                return problem
    elif isinstance(value, list):
        for index, item in enumerate(value):
            problem = json_value_problem(item, f"{path}[{index}]", depth + 1)
            if problem:
                return problem
    return None


def _string_problem(value: str, path: str) -> tuple[str, str] | None:
    if "\x00" in value:
        return path, f"{path} must not contain NUL characters"
    if any(0xD800 <= ord(ch) <= 0xDFFF for ch in value):
        return path, f"{path} must not contain unpaired surrogate characters"
    return None


def check_object_limit(value: Any, *, field: str, limit: Any) -> None:
    """400 naming `field` and the limit (`data.limit`, `data.unit`) when the object `value` is over `limit` (an
    `owlat.limits.ObjectLimit`). Called first in a field's validation, before any per-key work; the error is the
    envelope's own (not a `ValidationError`), so no per-key validation of the same object runs after it."""
    from owlat.api.errors import invalid_input
    from owlat.limits import LimitExceeded, check_object

    try:
        check_object(value, field=field, limit=limit)
    except LimitExceeded as exc:
        raise invalid_input(
            exc.describe(), field=field, data={"limit": exc.limit, "unit": exc.unit}
        ) from None


def check_json_value(value: Any, path: str) -> None:
    """Raise a `ValidationError` naming `path.to.value` when `value` cannot be stored as `jsonb`."""
    problem = json_value_problem(value, path)
    if problem:
        raise serializers.ValidationError({problem[0]: [problem[1]]})


class JSONValueField(serializers.JSONField):  # documented by owlat.api.schema.JSONValueFieldExtension
    """Free-form JSON (`object_only=True`: a JSON object) that `jsonb` can store."""

    def __init__(self, *, object_only: bool = False, **kwargs: Any) -> None:
        self.object_only = object_only
        super().__init__(**kwargs)

    def to_internal_value(self, data: Any) -> Any:
        if self.object_only and not isinstance(data, dict):
            raise serializers.ValidationError(f"{self.field_name} must be an object")
        problem = json_value_problem(data, self.field_name or "")
        if problem:
            path, message = problem
            inner = path[len(self.field_name or "") :].lstrip(".")
            # nested, so that the error envelope's `data.field` is the full path (`eventProperties.a.b`)
            raise serializers.ValidationError({inner: [message]} if inner else message)
        return data


_reused_fields = threading.local()


class InputSerializer(serializers.Serializer):
    # Base of request serializers: keys listed in `read_only_keys` are refused ("<key> is read-only").

    read_only_keys: ClassVar[tuple[str, ...]] = ()
    #: bind the declared fields once per thread and class, and hand them to each new instance (DRF
    #: deep-copies and re-binds every field per instantiation, ~0.1 ms of the events API's CPU). Only for a
    #: serializer whose fields keep no state of their own between requests (no nested serializers, nothing
    #: changed on `fields` after instantiation) and which is never nested inside itself.
    reuse_fields: ClassVar[bool] = False

    @cached_property
    def fields(self) -> Any:
        if not self.reuse_fields:
            return super().fields
        cache = getattr(_reused_fields, "by_class", None)
        if cache is None:
            cache = _reused_fields.by_class = {}
        fields = cache.get(type(self))
        if fields is None:
            fields = cache[type(self)] = super().fields
            return fields
        fields.serializer = self
        for field in fields.values():
            field.parent = self
        return fields

    def to_internal_value(self, data: Any) -> Any:
        if isinstance(data, dict):
            for key in self.read_only_keys:
                if key in data:
                    raise serializers.ValidationError({key: [f"{key} is read-only"]})
        return super().to_internal_value(data)


class TimestampField(serializers.DateTimeField):
    """ISO 8601 UTC with milliseconds and `Z` out (`2026-02-17T14:00:00.000Z`); in, any ISO 8601 timestamp
    (naive means UTC), else "<field> must be an ISO 8601 timestamp"."""

    def to_internal_value(self, value: Any) -> dt.datetime:
        message = f"{self.field_name} must be an ISO 8601 timestamp"
        if not isinstance(value, str) or "\x00" in value:
            raise serializers.ValidationError(message)
        text = value.strip()
        if text.endswith(("Z", "z")):
            text = text[:-1] + "+00:00"
        try:
            parsed = parse_datetime(text)
        except ValueError:
            parsed = None
        if parsed is None:
            raise serializers.ValidationError(message)
        if parsed.tzinfo is None:
            return parsed.replace(tzinfo=dt.UTC)
        try:  # in UTC: PostgreSQL refuses offsets beyond ±15:59 that ISO 8601 allows
            return parsed.astimezone(dt.UTC)
        except OverflowError:
            raise serializers.ValidationError(message) from None

    def to_representation(self, value: Any) -> str | None:  # type: ignore[override]  # null when unset
        from owlat.api.base import iso

        return iso(value) if value else None


class ChoiceListField(StringField):
    """`?status=draft,active`: comma-separated allowed values ("Invalid <field>: <value>" otherwise); in a
    query string the parameter may also repeat (`?status=draft&status=active`)."""

    def __init__(self, *, choices: list[str], **kwargs: Any) -> None:
        self.allowed = choices
        super().__init__(**kwargs)

    def get_value(self, dictionary: Any) -> Any:
        if hasattr(dictionary, "getlist") and self.field_name in dictionary:
            return ",".join(dictionary.getlist(self.field_name))
        return super().get_value(dictionary)

    def to_internal_value(self, data: Any) -> list[str]:  # type: ignore[override]  # a list, not the text
        values = [v.strip() for v in super().to_internal_value(data).split(",") if v.strip()]
        for value in values:
            if value not in self.allowed:
                raise serializers.ValidationError(f"Invalid {self.field_name}: {value}")
        return values


class QuerySerializer(serializers.Serializer):
    # Base of query-string serializers: a parameter sent empty (`?status=`) counts as absent.

    def __init__(self, instance: Any = None, data: Any = serializers.empty, **kwargs: Any) -> None:
        if data is not serializers.empty and hasattr(data, "getlist"):
            data = data.copy()
            for name in list(data.keys()):
                values = [v for v in data.getlist(name) if v != ""]
                if values:
                    data.setlist(name, values)
                else:
                    del data[name]
        super().__init__(instance, data=data, **kwargs)
