"""TRANSITIONAL: the hand-written base of `/api/v1` views being converted to `owlat.api.base.ApiView`.

Deleted once every endpoint is converted; do not use in new code.

Subclass `ApiView`, set `required_scope` (or `scopes = {"GET": "contacts:read", "POST": "contacts:write"}`)
and optionally `feature_flag`, and implement `get`/`post`/`put`/`patch`/`delete`. Inside a handler:

- `self.api_key`, `self.organization_id`, `self.actor` (`api_key:<key id>`, API-12);
- `self.body()` — the JSON object of API-05 (any Content-Type; top-level `null` = absent);
- `self.ok(data)`, `self.created(data)`, `self.accepted(data)`, `self.paginated(queryset, ...)`,
  `self.transitioned(data, outcome)`; raise `ApiError` / `invalid_input(...)` / `not_found(...)` /
  `outcome_error(outcome)` for failures.

`dispatch` applies, in the API-08 order: 405 for an unsupported method (routing) → authentication (401) →
rate limit (429) → scope (403) → feature flag (403) → Idempotency-Key (POST; API-11) → the handler.
Unsafe methods run in one transaction (a 5xx rolls the handler back). Every response to a request with a
valid key carries `X-RateLimit-Limit/Remaining/Reset`.

Routes: declare them with `api_route(r"contacts/(?P<id_or_email>.+?)", View)` — slash-optional, no redirect.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Sequence
from typing import Any, ClassVar

from django.db import transaction
from django.db.models import QuerySet
from django.urls import re_path
from rest_framework.negotiation import BaseContentNegotiation
from rest_framework.renderers import JSONRenderer
from rest_framework.response import Response
from rest_framework.views import APIView

from owlat.api import auth
from owlat.api import idempotency as idem
from owlat.api.errors import exception_handler, forbidden, invalid_input
from owlat.api.pagination import OrderKey, Page, order_by, paginate, parse_limit
from owlat.api.parsers import _invalid, decode_json_object, raw_body
from owlat.models import ApiKey

UTC = dt.UTC
SAFE_METHODS = ("GET", "HEAD", "OPTIONS")


from owlat.api.base import iso, outcome_error, parse_uuid, require_uuid, to_jsonable, transition_object  # noqa: E402, F401


def parse_iso(value: Any, *, field: str) -> dt.datetime:
    from django.utils.dateparse import parse_datetime

    message = f"{field} must be an ISO 8601 timestamp"
    if not isinstance(value, str):
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
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    return parsed


def read_json_body(request, *, required: bool = True, drop_nulls: bool = True) -> dict[str, Any]:
    body = raw_body(request)
    if not body.strip():
        if required:
            raise _invalid()
        return {}
    value = decode_json_object(body)
    if drop_nulls:
        value = {key: item for key, item in value.items() if item is not None}
    return value


def api_route(pattern: str, view: Any, name: str | None = None):
    """A slash-optional route (API-01): matches with and without one trailing slash, never redirects.

    `pattern` is a regex relative to `/api/v1/` without anchors or trailing slash; `view` an `ApiView`
    subclass or a view function.
    """
    pattern = pattern.strip("^$").rstrip("/")
    if isinstance(view, type) and issubclass(view, APIView):
        view = view.as_view()
    return re_path(rf"^{pattern}/?$", view, name=name)


class _JSONOnly(BaseContentNegotiation):
    """Always answer JSON whatever `Accept` says; parse every body as JSON (API-05)."""

    def select_parser(self, request, parsers):
        return parsers[0] if parsers else None

    def select_renderer(self, request, renderers, format_suffix=None):
        renderer = JSONRenderer()
        return renderer, renderer.media_type


# --- the base view ---------------------------------------------------------------------------------------


class LegacyApiView(APIView):
    """Base class of all `/api/v1` endpoints (see the module docstring)."""

    #: one scope for every method, or None when `scopes` maps method → scope
    required_scope: ClassVar[str | None] = None
    scopes: ClassVar[dict[str, str]] = {}
    #: a DOM-17 flag that gates every method of this view
    feature_flag: ClassVar[str | None] = None
    #: run unsafe methods in one transaction (a 5xx rolls the handler back)
    atomic: ClassVar[bool] = True
    #: authentication + rate limit; off only for health/schema
    authenticated: ClassVar[bool] = True

    authentication_classes: ClassVar[list] = []
    permission_classes: ClassVar[list] = []
    renderer_classes: ClassVar[list] = [JSONRenderer]
    content_negotiation_class = _JSONOnly

    api_key: ApiKey | None = None
    rate_state: auth.RateState | None = None

    # -- identity ----------------------------------------------------------------------------------------
    @property
    def organization_id(self) -> Any:
        assert self.api_key is not None
        return self.api_key.organization_id

    @property
    def actor(self) -> str:
        assert self.api_key is not None
        return f"api_key:{self.api_key.pk}"

    def scope_for(self, method: str) -> str | None:
        method = method.upper()
        if method == "HEAD":
            method = "GET"
        if self.scopes:
            return self.scopes.get(method)
        return self.required_scope

    def get_exception_handler(self):
        return exception_handler

    # -- request reading ---------------------------------------------------------------------------------
    def body(self, *, required: bool = True, drop_nulls: bool = True) -> dict[str, Any]:
        """API-05: the body as a JSON object; ignored (empty) on GET and DELETE."""
        if self.request.method in ("GET", "HEAD", "DELETE"):
            return {}
        return read_json_body(self.request._request, required=required, drop_nulls=drop_nulls)

    def query(self, name: str) -> str | None:
        return self.request._request.GET.get(name)

    def search_term(self) -> str | None:
        """`search` (`+` and `%20` decode to spaces); blank → None."""
        value = self.query("search")
        if value is None:
            return None
        value = value.strip()
        return value or None

    # -- responses ---------------------------------------------------------------------------------------
    def ok(self, data: Any, status: int = 200, **extra: Any) -> Response:
        return Response({"data": data, **extra}, status=status)

    def created(self, data: Any) -> Response:
        return Response({"data": data}, status=201)

    def accepted(self, data: Any) -> Response:
        return Response({"data": data}, status=202)

    def deleted(self, obj_id: Any) -> Response:
        return Response({"data": {"id": str(obj_id), "deleted": True}}, status=200)

    def transitioned(self, data: Any, outcome: Any) -> Response:
        """200 `{"data": <resource after>, "transition": {...}}` (API-24); refusals → `outcome_error`."""
        if not outcome.ok:
            raise outcome_error(outcome)
        return Response({"data": data, "transition": transition_object(outcome)}, status=200)

    def paginated(
        self,
        queryset: QuerySet,
        serialize: Callable[[Any], Any],
        *,
        order: Sequence[OrderKey] | Sequence[str] = ("-created_at", "-id"),
        list_key: str | None = None,
        total: int | None = None,
    ) -> Response:
        """API-07 list response: `limit`/`cursor` from the query, keyset order `order` (ending in a unique key)."""
        page = self.page(queryset, order=order, list_key=list_key, total=total)
        return Response({"data": [serialize(item) for item in page.items], "pagination": page.pagination()})

    def page(
        self,
        queryset: QuerySet,
        *,
        order: Sequence[OrderKey] | Sequence[str] = ("-created_at", "-id"),
        list_key: str | None = None,
        total: int | None = None,
    ) -> Page:
        keys = tuple(order_by(*order)) if order and isinstance(order[0], str) else tuple(order)  # type: ignore[arg-type]
        limit = parse_limit(self.query("limit"))
        return paginate(
            queryset,
            keys=keys,
            list_key=list_key or self.request._request.path_info.rstrip("/"),
            organization_id=self.organization_id,
            limit=limit,
            cursor=self.query("cursor") or None,
            total=total,
        )

    # -- the pipeline ------------------------------------------------------------------------------------
    def perform_content_negotiation(self, request, force=False):
        renderer = JSONRenderer()
        return renderer, renderer.media_type

    def check_access(self, request) -> None:
        """Authentication → rate limit → scope → feature flag (API-08 order)."""
        if not self.authenticated:
            return
        self.api_key = auth.authenticate_request(request._request)
        self.rate_state = auth.take_request_token(self.api_key)
        if not self.rate_state.allowed:
            raise auth.rate_limited_error(self.rate_state)
        scope = self.scope_for(request.method)
        if scope is None:
            # Every endpoint requires exactly one scope (API-03): an undeclared one fails closed.
            raise RuntimeError(f"{type(self).__name__} declares no scope for {request.method}")
        if scope not in (self.api_key.scopes or []):
            raise forbidden(f"This API key is missing the required scope: {scope}")
        if self.feature_flag:
            from owlat.flags import feature_disabled_message, flag_enabled

            if not flag_enabled(self.organization_id, self.feature_flag):
                raise forbidden(feature_disabled_message(self.feature_flag))

    def dispatch(self, request, *args, **kwargs):
        self.args = args
        self.kwargs = kwargs
        request = self.initialize_request(request, *args, **kwargs)
        self.request = request
        self.headers = self.default_response_headers
        try:
            method = request.method.lower()
            handler = getattr(self, method, None) if method in self.http_method_names else None
            if handler is None or method == "options":
                response = self.handle_exception(self._method_not_allowed(request))
            else:
                self.initial(request, *args, **kwargs)
                self.check_access(request)
                response = self._run(request, handler, *args, **kwargs)
        except Exception as exc:
            response = self.handle_exception(exc)
        self.response = self.finalize_response(request, response, *args, **kwargs)
        self._decorate(self.response)
        return self.response

    def _method_not_allowed(self, request):
        from rest_framework.exceptions import MethodNotAllowed

        return MethodNotAllowed(request.method)

    def initial(self, request, *args, **kwargs):
        # Content negotiation only; authentication, permissions and throttling are `check_access`.
        self.format_kwarg = None
        neg = self.perform_content_negotiation(request)
        request.accepted_renderer, request.accepted_media_type = neg

    def handle_exception(self, exc):
        response = exception_handler(exc, self.get_exception_handler_context())
        response.exception = True
        return response

    def _run(self, request, handler, *args, **kwargs) -> Response:
        unsafe = request.method not in SAFE_METHODS
        begin = None
        if request.method == "POST" and self.authenticated:
            key = idem.parse_idempotency_key(request._request.headers.get(idem.HEADER))
            if key is not None:
                fingerprint = idem.request_fingerprint(
                    method=request.method,
                    path=request._request.path,
                    body=raw_body(request._request),
                )
                begin = idem.idempotency_begin(api_key=self.api_key, key=key, fingerprint=fingerprint)
                if begin.replay:
                    return Response(
                        begin.record.response_body,
                        status=begin.record.response_status,
                        headers={idem.REPLAYED_HEADER: "true"},
                    )
        if not (unsafe and self.atomic) and begin is None:
            return handler(request, *args, **kwargs)
        return self._run_atomic(request, handler, begin, *args, **kwargs)

    def _run_atomic(self, request, handler, begin, *args, **kwargs) -> Response:
        release = False
        with transaction.atomic():
            if begin is not None and not idem.idempotency_lock(begin):
                raise idem._in_progress()
            try:
                with transaction.atomic():
                    response = handler(request, *args, **kwargs)
                    if response.status_code >= 500:
                        raise _RollBack(response)
            except _RollBack as rollback:
                response = rollback.response
            except Exception as exc:
                response = self.handle_exception(exc)
            if response.status_code >= 500:
                release = True
                transaction.set_rollback(True)
            elif begin is not None:
                idem.idempotency_complete(begin, status=response.status_code, body=to_jsonable(response.data))
        if release and begin is not None:
            idem.idempotency_release(begin)
        return response

    def _decorate(self, response) -> None:
        if self.rate_state is not None:
            for name, value in self.rate_state.headers().items():
                response[name] = value


class _RollBack(Exception):
    def __init__(self, response: Response) -> None:
        super().__init__("roll back")
        self.response = response


class LegacyPublicApiView(LegacyApiView):
    """An `/api/v1` view without key or rate limit (health, schema)."""

    authenticated = False
    atomic = False
