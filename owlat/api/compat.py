"""TRANSITIONAL: the helpers of the old hand-written view, for endpoints written before `owlat.api.base.ApiView`
moved onto DRF's extension points (today: `campaigns/api/` and `inbox/api/`). Do not use in new code; see `owlat/api/__init__.py`.

`LegacyApiView` is the new `ApiView` (same authentication, throttle, permissions, transaction, idempotency)
plus the old spellings: `scopes` / `required_scope` instead of `required_scopes`, `self.body()` instead of
`request.data`, `self.paginated(...)` instead of `paginate_queryset` + `get_paginated_response`,
`self.query()` / `self.search_term()` instead of a query serializer, `parse_iso` instead of a serializer
`DateTimeField`, and `api_route` instead of `path()`.
Delete this module when no app imports it (`tests/test_api_layout.py` lists the importers).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Sequence
from typing import Any, ClassVar

from django.db.models import QuerySet
from django.urls import re_path
from rest_framework import exceptions
from rest_framework.response import Response

from owlat.api.base import BODY_METHODS, ApiView
from owlat.api.errors import INVALID_JSON, invalid_input
from owlat.api.parsers import decode_json_object, raw_body

_ALL_METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE")


def parse_iso(value: Any, *, field: str) -> dt.datetime:
    """An ISO 8601 timestamp from a body; naive values are UTC; else 400 naming `field`."""
    from django.utils.dateparse import parse_datetime

    message = f"{field} must be an ISO 8601 timestamp"
    if not isinstance(value, str) or "\x00" in value:
        raise invalid_input(message, field=field)
    text = value.strip()
    if text.endswith(("Z", "z")):
        text = text[:-1] + "+00:00"
    try:
        parsed = parse_datetime(text)
    except ValueError:
        parsed = None
    if parsed is None:
        raise invalid_input(message, field=field)
    return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=dt.UTC)


def api_route(pattern: str, view: Any, name: str | None = None):
    """The old slash-optional route; `ApiMiddleware` makes a plain `path()` slash-optional too."""
    pattern = pattern.strip("^$").rstrip("/")
    if isinstance(view, type):
        view = view.as_view()
    return re_path(rf"^{pattern}/?$", view, name=name)


class LegacyApiView(ApiView):
    required_scope: ClassVar[str | None] = None
    scopes: ClassVar[dict[str, str]] = {}
    # the body is checked by `body()` when a handler reads it, as before
    empty_body_methods = frozenset(BODY_METHODS)

    def scope_for(self, method: str) -> str | None:
        if self.scopes:
            return self.scopes.get(method)
        return self.required_scope

    @property
    def required_scopes(self) -> dict[str, str]:  # type: ignore[override]
        return {method: scope for method in _ALL_METHODS if (scope := self.scope_for(method))}

    def body(self, *, required: bool = True, drop_nulls: bool = True) -> dict[str, Any]:
        if self.request.method not in BODY_METHODS:
            return {}
        raw = raw_body(self.request._request)
        if not raw.strip():
            if required:
                raise exceptions.ParseError(INVALID_JSON)
            return {}
        if drop_nulls:
            return dict(self.request.data)
        return decode_json_object(raw)

    def query(self, name: str) -> str | None:
        return self.request.query_params.get(name)

    def search_term(self) -> str | None:
        from owlat.api.views import search_term

        return search_term(self.request)

    def paginated(
        self,
        queryset: QuerySet,
        serialize: Callable[[Any], Any],
        *,
        order: Sequence[str] = ("-created_at", "-id"),
        list_key: str | None = None,
    ) -> Response:
        self.ordering, self.list_key = tuple(order), list_key
        page = self.paginate_queryset(queryset)
        return self.get_paginated_response([serialize(item) for item in page])
