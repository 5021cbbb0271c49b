"""The base view of every `/api/v1` endpoint, on DRF's own extension points (API-01…12).

- authentication `ApiKeyAuthentication` (401), throttle `ApiKeyRateThrottle` (429), permissions `HasScope`
  and `FeatureFlagEnabled` (403), in API-08's order: `initial()` runs DRF's steps with the throttle
  before the permissions; an unsupported method is 405 before any of them;
- `X-RateLimit-Limit/Remaining/Reset` on every response to a request with a valid key;
- unsafe methods run in one transaction (a 5xx rolls the handler back) and `POST` honours
  `Idempotency-Key` (API-11; `owlat.api.idempotency`);
- `POST`/`PUT`/`PATCH` need a JSON object body (API-05) unless the method is in `empty_body_methods`;
- every failure leaves as the DOM-04 envelope (`EXCEPTION_HANDLER`: `owlat.api.errors.exception_handler`);
- lists paginate with `KeysetPagination` (set `ordering` and `list_key`).

See `owlat/api/__init__.py` for how an endpoint is written.
"""

from __future__ import annotations

import datetime as dt
import json
import uuid
from collections.abc import Callable, Mapping
from typing import Any, ClassVar, NoReturn

from django.db import transaction
from django.db.models import Model, QuerySet
from rest_framework import exceptions
from rest_framework.generics import GenericAPIView
from rest_framework.renderers import JSONRenderer
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.utils.encoders import JSONEncoder

from owlat.api import idempotency as idem
from owlat.api.authentication import ApiKeyAuthentication
from owlat.api.errors import INVALID_JSON, ApiError, forbidden, invalid_input, invalid_state, not_found
from owlat.api.negotiation import JSONOnlyNegotiation
from owlat.api.pagination import KeysetPagination
from owlat.api.parsers import body_is_blank, raw_body
from owlat.api.permissions import FeatureFlagEnabled, HasScope
from owlat.api.throttling import TAKE_WITH_AUTH_ATTR, ApiKeyRateThrottle, RateLimited, rate_state
from owlat.ids import PrimaryKey, UUIDLike

UTC = dt.UTC
SAFE_METHODS = ("GET", "HEAD", "OPTIONS")
BODY_METHODS = ("POST", "PUT", "PATCH")


# --- wire helpers ------------------------------------------------------------------------------------------


def iso(value: dt.datetime | None) -> str | None:
    """ISO 8601 UTC with milliseconds and `Z` (API-05): `2026-02-17T14:00:00.000Z`."""
    if value is None:
        return None
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    value = value.astimezone(UTC)
    # four-digit year always (strftime's %Y gives "60" for the year 60 on glibc, which is not RFC 3339)
    return f"{value.year:04d}-" + value.strftime("%m-%dT%H:%M:%S.") + f"{value.microsecond // 1000:03d}Z"


def parse_uuid(value: Any) -> uuid.UUID | None:
    """A well-formed id (the string form of a UUID primary key), else None."""
    if isinstance(value, uuid.UUID):
        return value
    if not isinstance(value, str):
        return None
    try:
        return uuid.UUID(value.strip())
    except ValueError:
        return None


def require_uuid(value: Any, resource: str) -> uuid.UUID:
    """API-09: a malformed id in a path → 400 "Invalid <resource> ID format"."""
    parsed = parse_uuid(value)
    if parsed is None:
        raise invalid_input(f"Invalid {resource} ID format")
    return parsed


def validated(serializer_class: type, data: Any, **kwargs: Any) -> dict[str, Any]:
    """`data` (a body or a query) through a request serializer; invalid → 400 naming the field (API-08)."""
    serializer = serializer_class(data=data, **kwargs)
    serializer.is_valid(raise_exception=True)
    return dict(serializer.validated_data)


def filter_by_params(queryset: QuerySet, params: Mapping[str, Any], **lookups: str) -> QuerySet:
    """`queryset` narrowed by each list filter the query sent: `filter_by_params(queryset, params,
    status="status__in", search="name__icontains")` adds `status__in=params["status"]` when `status` is given
    (and not empty), and so on."""
    for name, lookup in lookups.items():
        if params.get(name):
            queryset = queryset.filter(**{lookup: params[name]})
    return queryset


def outcome_error(outcome: Any) -> ApiError:
    """API-12: a refused lifecycle `Outcome` → 404 for `*_not_found`, else 422 `invalid_state`."""
    reason = outcome.reason or "invalid_state"
    message = outcome.message or reason
    if reason.endswith("_not_found") or reason == "not_found":
        return ApiError("not_found", message)
    data: dict[str, Any] = {"reason": reason}
    if getattr(outcome, "from_state", None) is not None:
        data["from"] = outcome.from_state
    if getattr(outcome, "to_state", None) is not None:
        data["to"] = outcome.to_state
    return ApiError("invalid_state", message, data)


def transition_object(outcome: Any) -> dict[str, Any]:
    """API-24: `{"applied": "transitioned" | "recorded", "from", "to"}`."""
    return {"applied": outcome.applied, "from": outcome.from_state, "to": outcome.to_state}


def to_jsonable(data: Any) -> Any:
    """Response data as plain JSON values (UUIDs, datetimes through DRF's encoder)."""
    return json.loads(json.dumps(data, cls=JSONEncoder))


class _Replay(Exception):
    """An `Idempotency-Key` whose response is stored: answer it instead of running the handler."""

    def __init__(self, record: Any) -> None:
        super().__init__("idempotent replay")
        self.record = record


class _RollBack(Exception):
    """Passed to a savepoint's `__exit__` to roll it back after a 5xx answer."""


# --- the base view ---------------------------------------------------------------------------------------


class ApiView(GenericAPIView):
    # An `/api/v1` endpoint: declare `required_scopes` (method → scope) and optionally `feature_flag`.

    authentication_classes: Any = [ApiKeyAuthentication]
    permission_classes: Any = [HasScope, FeatureFlagEnabled]
    throttle_classes: Any = [ApiKeyRateThrottle]
    pagination_class = KeysetPagination
    renderer_classes: Any = [JSONRenderer]
    content_negotiation_class = JSONOnlyNegotiation

    #: method → the one scope it needs (API-03); HEAD uses GET's
    required_scopes: ClassVar[dict[str, str]] = {}
    #: a DOM-17 flag that gates every method of this view
    feature_flag: ClassVar[str | None] = None
    #: run unsafe methods in one transaction (a 5xx rolls the handler back)
    atomic: ClassVar[bool] = True
    #: unsafe methods that take no body (transitions); the others need a JSON object
    empty_body_methods: ClassVar[frozenset[str]] = frozenset()
    #: keyset order of the list (keys ending in a unique one) and what its cursors are bound to
    ordering: tuple[str, ...] = ("-created_at", "-id")
    list_key: str | None = None

    _outer: Any = None
    _inner: Any = None
    _idempotency: idem.Begin | None = None

    # -- identity ----------------------------------------------------------------------------------------
    @property
    def organization_id(self) -> uuid.UUID:
        return self.request.auth.organization_id  # type: ignore[union-attr]  # the ApiKey

    @property
    def actor(self) -> str:
        """The audit actor of this request (API-12): `api_key:<key id>`."""
        return f"api_key:{self.request.auth.pk}"

    def get_owned(self, model: type[Model], object_id: UUIDLike, resource: str) -> Any:
        """The key's organization's `model` row with this id: a malformed id → 400 "Invalid <resource> ID
        format" (API-09); none, or another organization's → 404 "<Resource> not found" (API-02)."""
        pk = require_uuid(object_id, resource)
        row = model._default_manager.filter(pk=pk, organization_id=self.organization_id).first()
        if row is None:
            raise not_found(f"{resource.capitalize()} not found")
        return row

    # -- responses ---------------------------------------------------------------------------------------
    def ok(self, data: Any, status: int = 200, **extra: Any) -> Response:
        return Response({"data": data, **extra}, status=status)

    def created(self, data: Any) -> Response:
        return Response({"data": data}, status=201)

    def accepted(self, data: Any) -> Response:
        return Response({"data": data}, status=202)

    def deleted(self, obj_id: PrimaryKey) -> Response:
        return Response({"data": {"id": str(obj_id), "deleted": True}}, status=200)

    def delete_unless_in_use(
        self,
        row: Model,
        resource: str,
        in_use: Callable[[Any, Any], list[dict[str, str]]],
        delete: Callable[[], Any],
        message: str = "",
    ) -> Response:
        """Delete a topic, segment or template (`delete()`) and answer its id; while a campaign or automation
        uses it (`in_use(organization_id, pk)`, `owlat.inuse`) → 422 `<resource>_in_use` with `usedBy`
        (API-25, API-26)."""
        used_by = in_use(self.organization_id, row.pk)
        if used_by:
            raise invalid_state(
                message
                or f"{resource.capitalize()} is in use by a campaign or automation and cannot be deleted",
                f"{resource}_in_use",
                usedBy=used_by,
            )
        row_id = row.pk
        delete()
        return self.deleted(row_id)

    def list_response(self, queryset: QuerySet, serializer_class: type) -> Response:
        """One keyset page of `queryset` (API-07: `ordering`, `list_key`), each row through `serializer_class`."""
        page = self.paginate_queryset(queryset)
        return self.get_paginated_response(serializer_class(page, many=True).data)

    def transitioned(self, data: Any, outcome: Any) -> Response:
        """200 `{"data": <resource after>, "transition": {...}}` (API-24); refusals → `outcome_error`."""
        if not outcome.ok:
            raise outcome_error(outcome)
        return Response({"data": data, "transition": transition_object(outcome)}, status=200)

    # -- DRF hooks ---------------------------------------------------------------------------------------
    def initial(self, request: Request, *args: Any, **kwargs: Any) -> None:
        """DRF's `initial` in API-08's order: 405 → 401 → 429 → 403; then the transaction and idempotency."""
        method = (request.method or "").lower()
        if method not in self.http_method_names or not hasattr(self, method):
            raise exceptions.MethodNotAllowed(method.upper())
        self.format_kwarg = self.get_format_suffix(**kwargs)
        request.accepted_renderer, request.accepted_media_type = self.perform_content_negotiation(request)
        request.version, request.versioning_scheme = self.determine_version(request, *args, **kwargs)
        if ApiKeyRateThrottle in self.throttle_classes:  # the token is taken in the key lookup's statement
            setattr(request._request, TAKE_WITH_AUTH_ATTR, True)
        self.perform_authentication(request)
        self.check_throttles(request)
        self.check_permissions(request)
        if request.method not in SAFE_METHODS:
            self._begin_unsafe(request)

    def throttled(self, request: Request, wait: float | None) -> NoReturn:
        raise RateLimited(wait)

    def handle_exception(self, exc: Exception) -> Response:
        if isinstance(exc, _Replay):
            record = exc.record
            return Response(
                record.response_body,
                status=record.response_status,
                headers={idem.REPLAYED_HEADER: "true"},
            )
        self._close_savepoint(exc)
        return super().handle_exception(exc)

    def finalize_response(self, request: Request, response: Any, *args: Any, **kwargs: Any) -> Any:
        self._close_transaction(response)
        response = super().finalize_response(request, response, *args, **kwargs)
        state = rate_state(request)
        if state is not None:
            for name, value in state.headers().items():
                response[name] = value
        return response

    # -- transaction and Idempotency-Key (API-11) ---------------------------------------------------------
    def _begin_unsafe(self, request: Request) -> None:
        if request.method == "POST":
            key = idem.parse_idempotency_key(request.META.get(idem.META_KEY))
            if key is not None:
                fingerprint = idem.request_fingerprint(
                    method=request.method, path=request._request.path, body=raw_body(request._request)
                )
                api_key: Any = request.auth
                begin = idem.idempotency_begin(api_key=api_key, key=key, fingerprint=fingerprint)
                if begin.replay:
                    raise _Replay(begin.record)
                self._idempotency = begin
        if self.atomic or self._idempotency is not None:
            self._outer = transaction.atomic()
            self._outer.__enter__()
            if self._idempotency is not None:
                if not idem.idempotency_lock(self._idempotency):
                    self._outer.__exit__(None, None, None)
                    self._outer = None
                    raise idem._in_progress()
                # the handler's savepoint: a refused request rolls it back and still stores its answer
                self._inner = transaction.atomic()
                self._inner.__enter__()
        if (
            request.method in BODY_METHODS
            and request.method not in self.empty_body_methods
            and body_is_blank(request._request)
        ):
            raise exceptions.ParseError(INVALID_JSON)

    def _close_savepoint(self, exc: BaseException | None) -> None:
        """Leave the handler's savepoint: released on success, rolled back on an exception or a 5xx. Without an
        `Idempotency-Key` there is no savepoint (two statements less per request): the transaction
        holds nothing but the handler's writes, so it is marked for rollback instead."""
        if self._inner is None:
            if exc is not None and self._outer is not None:
                transaction.set_rollback(True)
            return
        inner, self._inner = self._inner, None
        if exc is None:
            inner.__exit__(None, None, None)
        else:
            inner.__exit__(type(exc), exc, exc.__traceback__)

    def _close_transaction(self, response: Any) -> None:
        if self._outer is None:
            return
        failed = response.status_code >= 500
        self._close_savepoint(_RollBack() if failed else None)
        outer, self._outer = self._outer, None
        begin, self._idempotency = self._idempotency, None
        try:
            if failed:
                transaction.set_rollback(True)
            elif begin is not None:
                idem.idempotency_complete(begin, status=response.status_code, body=to_jsonable(response.data))
        finally:
            outer.__exit__(None, None, None)
        if failed and begin is not None:
            idem.idempotency_release(begin)


class PublicApiView(ApiView):
    # An `/api/v1` endpoint without key, rate limit or scope (health).

    authentication_classes: Any = []
    permission_classes: Any = []
    throttle_classes: Any = []
    atomic = False


__all__ = [
    "ApiError",
    "ApiView",
    "PublicApiView",
    "filter_by_params",
    "forbidden",
    "invalid_input",
    "iso",
    "not_found",
    "outcome_error",
    "parse_uuid",
    "require_uuid",
    "to_jsonable",
    "transition_object",
    "validated",
]
