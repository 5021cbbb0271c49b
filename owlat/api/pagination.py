"""Keyset cursor pagination (API-07).

A list is ordered by one or more keys ending in a unique one (usually `id`); the cursor is a signed,
opaque token holding the last row's key values, bound to the list and the organization, so a cursor
from another list or organization, or a tampered one, is "Invalid cursor". Every item that stays
unchanged during a walk is returned exactly once, with no row ceiling.

Views use `KeysetPagination` (DRF's `pagination_class`): a list view sets `ordering` (keys ending in a
unique one) and `list_key` (what a cursor is bound to), then

    page = self.paginate_queryset(queryset)
    return self.get_paginated_response(OutputSerializer(page, many=True).data)

and the answer is `{"data": [...], "pagination": {"limit", "totalItems", "cursor", "isDone"}}`.
"""

from __future__ import annotations

import datetime as dt
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from django.core import signing
from django.db.models import Q, QuerySet
from django.utils.dateparse import parse_datetime
from rest_framework.pagination import BasePagination
from rest_framework.response import Response

from owlat.api.errors import ApiError
from owlat.ids import UUIDLike

DEFAULT_LIMIT = 25
MAX_LIMIT = 100
CURSOR_SALT = "owlat.api.cursor"
#: what `encode_cursor` writes (django.core.signing: base64url payload, `.` when compressed, timestamp, signature);
#: documented, so that a cursor of another shape is an invalid request (a well-formed one may still be "Invalid
#: cursor": the document cannot say which tokens this server signed for the list and organization)
CURSOR_PATTERN = r"^\.?[A-Za-z0-9_-]+:[A-Za-z0-9_-]+:[A-Za-z0-9_-]+$"


def invalid_limit() -> ApiError:
    return ApiError(
        "invalid_input", "Invalid limit", {"field": "limit", "fields": {"limit": ["Invalid limit"]}}
    )


def invalid_cursor() -> ApiError:
    return ApiError(
        "invalid_input", "Invalid cursor", {"field": "cursor", "fields": {"cursor": ["Invalid cursor"]}}
    )


def parse_limit(raw: str | None) -> int:
    """`limit`: default 25, above 100 clamped to 100; non-integer or < 1 → 400 "Invalid limit"."""
    if raw is None:
        return DEFAULT_LIMIT
    text = raw.strip()
    if not text or not (text.isdigit() or (text[0] in "+" and text[1:].isdigit())):
        raise invalid_limit()
    value = int(text)
    if value < 1:
        raise invalid_limit()
    return min(value, MAX_LIMIT)


@dataclass(frozen=True)
class OrderKey:
    """One ordering key: a model field or annotation name, descending or not."""

    name: str
    descending: bool = False


def order_by(*spec: str) -> tuple[OrderKey, ...]:
    """`order_by("-created_at", "-id")` → keys (a leading `-` is descending)."""
    return tuple(OrderKey(s.lstrip("-"), s.startswith("-")) for s in spec)


def _encode_value(value: Any) -> Any:
    if value is None:
        return None
    if isinstance(value, dt.datetime):
        return {"t": value.isoformat()}
    if isinstance(value, dt.date):
        return {"d": value.isoformat()}
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, Decimal):
        return {"n": str(value)}
    if isinstance(value, bool | int | float | str):
        return value
    return str(value)


def _decode_value(value: Any) -> Any:
    if isinstance(value, dict):
        if "t" in value:
            parsed = parse_datetime(str(value["t"]))
            if parsed is None:
                raise invalid_cursor()
            return parsed
        if "d" in value:
            return dt.date.fromisoformat(str(value["d"]))
        if "n" in value:
            return Decimal(str(value["n"]))
        raise invalid_cursor()
    if isinstance(value, list):
        raise invalid_cursor()
    return value


def encode_cursor(*, list_key: str, organization_id: UUIDLike, values: Sequence[Any]) -> str:
    payload = {"l": list_key, "o": str(organization_id), "v": [_encode_value(v) for v in values]}
    return signing.dumps(payload, salt=CURSOR_SALT, compress=True)


def decode_cursor(raw: str, *, list_key: str, organization_id: UUIDLike, width: int) -> list[Any]:
    try:
        payload = signing.loads(raw, salt=CURSOR_SALT)
    except (signing.BadSignature, ValueError, TypeError, UnicodeError):
        raise invalid_cursor()
    if (
        not isinstance(payload, dict)
        or payload.get("l") != list_key
        or payload.get("o") != str(organization_id)
        or not isinstance(payload.get("v"), list)
        or len(payload["v"]) != width
    ):
        raise invalid_cursor()
    try:
        return [_decode_value(v) for v in payload["v"]]
    except (ValueError, TypeError):
        raise invalid_cursor()


def keyset_filter(keys: Sequence[OrderKey], values: Sequence[Any]) -> Q:
    """Rows strictly after `values` in the order `keys` (nulls not supported in key columns)."""
    condition = Q()
    for index in range(len(keys) - 1, -1, -1):
        key = keys[index]
        lookup = "lt" if key.descending else "gt"
        step = Q(**{f"{key.name}__{lookup}": values[index]})
        if index < len(keys) - 1:
            step |= Q(**{key.name: values[index]}) & condition
        condition = step
    return condition


@dataclass
class Page:
    items: list[Any]
    limit: int
    total_items: int
    cursor: str | None

    @property
    def is_done(self) -> bool:
        return self.cursor is None

    def pagination(self) -> dict[str, Any]:
        return {
            "limit": self.limit,
            "totalItems": self.total_items,
            "cursor": self.cursor,
            "isDone": self.cursor is None,
        }


def paginate(
    queryset: QuerySet,
    *,
    keys: Sequence[OrderKey],
    list_key: str,
    organization_id: UUIDLike,
    limit: int,
    cursor: str | None,
    total: int | None = None,
) -> Page:
    """One page of `queryset` in `keys` order after `cursor`; `total` defaults to `queryset.count()`."""
    keys = tuple(keys)
    total_items = queryset.count() if total is None else total
    ordered = queryset.order_by(*[f"-{k.name}" if k.descending else k.name for k in keys])
    if cursor:
        values = decode_cursor(cursor, list_key=list_key, organization_id=organization_id, width=len(keys))
        try:
            ordered = ordered.filter(keyset_filter(keys, values))
        except Exception:  # a value of the wrong type for its column
            raise invalid_cursor()
    rows = list(ordered[: limit + 1])
    next_cursor = None
    if len(rows) > limit:
        rows = rows[:limit]
        last = rows[-1]
        next_cursor = encode_cursor(
            list_key=list_key,
            organization_id=organization_id,
            values=[_key_value(last, k.name) for k in keys],
        )
    return Page(items=rows, limit=limit, total_items=min(total_items, 2**31 - 1), cursor=next_cursor)


def _key_value(row: Any, name: str) -> Any:
    if isinstance(row, dict):
        return row[name]
    value = row
    for part in name.split("__"):
        value = getattr(value, part)
    return value


DEFAULT_ORDERING = ("-created_at", "-id")


class KeysetPagination(BasePagination):
    """API-07 as a DRF pagination class: `?limit=` (1–100, default 25) and `?cursor=` (opaque)."""

    def paginate_queryset(self, queryset: QuerySet, request: Any, view: Any = None) -> list[Any]:
        ordering = tuple(getattr(view, "ordering", None) or DEFAULT_ORDERING)
        list_key = getattr(view, "list_key", None) or request._request.path_info.rstrip("/")
        self.page = paginate(
            queryset,
            keys=order_by(*ordering),
            list_key=list_key,
            organization_id=request.auth.organization_id,
            limit=parse_limit(request.query_params.get("limit")),
            cursor=request.query_params.get("cursor") or None,
        )
        return self.page.items

    def get_paginated_response(self, data: Any) -> Response:
        return Response({"data": data, "pagination": self.page.pagination()})

    def get_paginated_response_schema(self, schema: dict[str, Any]) -> dict[str, Any]:
        return {
            "type": "object",
            "required": ["data", "pagination"],
            "properties": {
                "data": schema,
                "pagination": {
                    "type": "object",
                    "required": ["limit", "totalItems", "cursor", "isDone"],
                    "properties": {
                        "limit": {"type": "integer", "example": DEFAULT_LIMIT},
                        "totalItems": {"type": "integer", "example": 120},
                        "cursor": {
                            "type": "string",
                            "nullable": True,
                            "description": "Pass as `cursor` to get the next page; null on the last page.",
                        },
                        "isDone": {"type": "boolean", "description": "True on the last page."},
                    },
                },
            },
        }

    def get_schema_operation_parameters(self, view: Any) -> list[dict[str, Any]]:
        return [
            {
                "name": "limit",
                "in": "query",
                "required": False,
                "description": f"Items per page, 1–{MAX_LIMIT} (larger values are clamped); default {DEFAULT_LIMIT}.",
                "schema": {"type": "integer", "minimum": 1, "default": DEFAULT_LIMIT},
            },
            {
                "name": "cursor",
                "in": "query",
                "required": False,
                "description": "The `pagination.cursor` of the previous page (an opaque token).",
                "schema": {"type": "string", "pattern": CURSOR_PATTERN},
            },
        ]
