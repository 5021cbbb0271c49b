"""API key authentication (DOM-03, API-02) as a DRF `BaseAuthentication`, and its OpenAPI bearer scheme."""

from __future__ import annotations

from typing import Any

from drf_spectacular.extensions import OpenApiAuthenticationExtension
from rest_framework import exceptions
from rest_framework.authentication import BaseAuthentication
from rest_framework.request import Request

from owlat.api import auth
from owlat.api.errors import ApiError
from owlat.api.throttling import RATE_STATE_ATTR, TAKE_WITH_AUTH_ATTR
from owlat.lookup_throttle import lookup_failed, lookup_refused
from owlat.models import ApiKey


class LookupsThrottled(exceptions.Throttled):
    """429 for a client whose failed key lookups are over `AUTH_FAILURE_*` (owlat.lookup_throttle)."""

    def __init__(self, wait: int) -> None:
        super().__init__(wait)
        self.detail = exceptions.ErrorDetail(
            f"Too many invalid API keys from this address. Retry in {wait} s.", code=self.default_code
        )


class ApiKeyAuthentication(BaseAuthentication):
    """`Authorization: Bearer lm_live_…` (or the bare key). Every `/api/v1` endpoint but health needs one.

    A request without a usable header is refused here (401 "Missing or invalid Authorization header…")
    rather than left anonymous: no endpoint accepts anonymous callers. A client with too many keys that matched
    nothing is answered 429 before any lookup (owlat.lookup_throttle). `request.user` and `request.auth`
    are both the `ApiKey`.
    """

    keyword = "Bearer"

    def authenticate(self, request: Request) -> tuple[ApiKey, ApiKey]:
        django_request = request._request
        wait = lookup_refused(django_request)  # too many failed lookups from this client: no lookup at all
        if wait:
            raise LookupsThrottled(wait)
        try:
            if getattr(django_request, TAKE_WITH_AUTH_ATTR, False):
                # the view's rate-limit throttle runs next: take its token in the lookup's statement
                key, state = auth.authenticate_request_and_take(django_request)
                setattr(django_request, RATE_STATE_ATTR, state)
            else:
                key = auth.authenticate_request(django_request)
        except ApiError as exc:
            if exc.message == auth.INVALID_KEY:  # a lookup that found no key (not a malformed header)
                wait = lookup_failed(django_request)
                if wait:
                    raise LookupsThrottled(wait) from exc
            raise exceptions.AuthenticationFailed(exc.message) from exc
        return key, key

    def authenticate_header(self, request: Request) -> str:
        return self.keyword


class ApiKeyScheme(OpenApiAuthenticationExtension):
    """The bearer scheme in the OpenAPI document (Swagger UI's Authorize button)."""

    target_class = ApiKeyAuthentication
    name = "ApiKey"

    def get_security_definition(self, auto_schema: Any) -> dict[str, Any]:
        return {
            "type": "http",
            "scheme": "bearer",
            "bearerFormat": "lm_live_…",
            "description": "An API key created in the admin (Settings → API keys): "
            "`Authorization: Bearer lm_live_…`. Each key carries scopes; each endpoint needs one.",
        }
