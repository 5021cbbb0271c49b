"""`/api/v1` wire rules that apply before and around any view (API-01).

- `OPTIONS` on any API path → 204 preflight without authentication (`ApiCorsMiddleware`, django-cors-headers
  with API-01's answer); CORS headers on every API response (the `Origin` is echoed only when listed in
  `API_ALLOWED_ORIGINS`; `*` there allows every origin).
- API keys are the only credential: cookies are dropped from API requests and never set on API responses,
  and no CSRF check applies.
- Every route is slash-optional and never redirects: a path that only resolves with (or without) one
  trailing slash is routed to that form internally.
- An unknown API path → JSON 404 "Not found"; an exception escaping a view or any non-JSON 5xx → JSON 500
  "Internal server error" (never HTML, never a trace).
- The session, authentication and messages middleware of the admin step aside for API paths
  (`*ExceptApi`): with the cookies dropped they found no session, no user and no messages, at
  about 0.1 ms of CPU per request; the one trace they left, `Vary: Cookie` (the session was read
  to find the anonymous user), is still added.
"""

from __future__ import annotations

import logging
from functools import lru_cache
from typing import Any
from urllib.parse import urlsplit

from corsheaders.middleware import CorsMiddleware
from django.conf import settings
from django.contrib.auth.middleware import AuthenticationMiddleware
from django.contrib.messages.middleware import MessageMiddleware
from django.contrib.sessions.middleware import SessionMiddleware
from django.core.signals import setting_changed
from django.dispatch import receiver
from django.http import HttpRequest, HttpResponse, HttpResponseBase
from django.urls import Resolver404, resolve
from django.utils.cache import patch_vary_headers

from owlat.api.errors import INTERNAL, NOT_FOUND, json_error_response

logger = logging.getLogger("owlat.api")

API_PREFIX = "/api/v1"


def is_api_path(path: str) -> bool:
    return path == API_PREFIX or path.startswith(API_PREFIX + "/")


def _vary_origin(response: HttpResponse) -> None:
    """`Vary: Origin` spelled as API-01 has it (django-cors-headers would add a lower-case `origin`)."""
    vary = [v.strip() for v in response.get("Vary", "").split(",") if v.strip()]
    if "origin" not in {v.lower() for v in vary}:
        vary.append("Origin")
    response["Vary"] = ", ".join(vary)


class ApiCorsMiddleware(CorsMiddleware):
    """django-cors-headers for `/api/v1` (`CORS_URLS_REGEX`), answering every API `OPTIONS` with 204 (API-01).

    A preflight needs no key and reaches no view; the CORS headers are added by django-cors-headers.
    """

    def check_preflight(self, request: HttpRequest) -> HttpResponseBase | None:
        response = super().check_preflight(request)
        if request.method == "OPTIONS" and is_api_path(request.path_info):
            response = HttpResponse(status=204)
            del response["Content-Type"]
            _vary_origin(response)
        return response

    def origin_found_in_white_lists(self, origin: str, url: Any) -> bool:
        """`API_ALLOWED_ORIGINS` (read per request): listed origins, or every origin with `*`."""
        allowed = getattr(settings, "API_ALLOWED_ORIGINS", None) or []
        return origin in allowed or "*" in allowed

    def add_response_headers(self, request: HttpRequest, response: Any) -> Any:
        if is_api_path(request.path_info):
            _vary_origin(response)
            if "HTTP_ORIGIN" not in request.META:
                # django-cors-headers adds nothing but `Vary: origin` (already there) to a request without an
                # Origin; answered here without building `request.headers` for it
                return response
        return super().add_response_headers(request, response)


@lru_cache(maxsize=4096)
def _resolves(path_info: str, urlconf: str | None, root_urlconf: str) -> bool:
    """Whether the path resolves. Cached per process (the handler resolves every request again; the
    URLconf does not change while a process runs, and the cache is cleared when a test changes settings)."""
    try:
        resolve(path_info, urlconf)
    except Resolver404:
        return False
    return True


@receiver(setting_changed)
def _clear_resolves(**kwargs: Any) -> None:
    _resolves.cache_clear()


def _route_slash_optional(request: HttpRequest) -> None:
    """If the path resolves only with/without one trailing slash, route that form (no redirect)."""
    urlconf = getattr(request, "urlconf", None)
    path_info = request.path_info
    root = settings.ROOT_URLCONF
    if _resolves(path_info, urlconf, root):
        return
    alternative = path_info[:-1] if path_info.endswith("/") else path_info + "/"
    if not alternative or alternative == "/":
        return
    if not _resolves(alternative, urlconf, root):
        return
    script_prefix_len = len(request.path) - len(path_info)
    request.path_info = alternative
    request.path = request.path[:script_prefix_len] + alternative


class ApiMiddleware:
    """Right after `ApiCorsMiddleware` in MIDDLEWARE; non-API requests pass through untouched."""

    def __init__(self, get_response: Any) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> Any:
        if not is_api_path(request.path_info):
            return self.get_response(request)

        # API keys are the only credential (API-01): no cookies in, none out, no CSRF.
        request.COOKIES = {}
        request._dont_enforce_csrf_checks = True  # type: ignore[attr-defined]  # Django's CSRF opt-out
        _route_slash_optional(request)

        response = self.get_response(request)

        if not getattr(response, "owlat_api", False) and not _is_json(response):
            if response.status_code == 404 or _is_append_slash_redirect(request, response):
                response = json_error_response("not_found", NOT_FOUND, 404)
            elif response.status_code >= 500:
                response = json_error_response("internal", INTERNAL, 500)
        response.cookies.clear()
        return response

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if not is_api_path(request.path_info):
            return None
        from django.http import Http404

        if isinstance(exception, Http404):
            return json_error_response("not_found", NOT_FOUND, 404)
        logger.exception("Unhandled exception under %s", API_PREFIX, exc_info=exception)
        return json_error_response("internal", INTERNAL, 500)


def _is_append_slash_redirect(request: HttpRequest, response: HttpResponse) -> bool:
    """APPEND_SLASH's redirect (never wanted under /api/v1: a slash-less POST would lose its body)."""
    if response.status_code not in (301, 302, 307, 308):
        return False
    location = urlsplit(response.get("Location", "")).path
    return location == request.path + "/"


def _is_json(response: HttpResponse) -> bool:
    return response.get("Content-Type", "").startswith("application/json")


# --- the admin's middleware, stepping aside under /api/v1 ----------------------------------------


class SessionMiddlewareExceptApi(SessionMiddleware):
    """Django's session middleware outside the API. Under `/api/v1` the cookies are dropped (`ApiMiddleware`),
    so the session it attached was always empty and never saved; it only added `Vary: Cookie` because
    `ActiveOrganizationMiddleware` read it to find the (anonymous) user — added here the same way, whenever
    the request got that far."""

    def __call__(self, request: HttpRequest) -> Any:
        if not is_api_path(request.path_info):
            return super().__call__(request)
        response: Any = self.get_response(request)
        if hasattr(request, "tenancy"):  # set by ActiveOrganizationMiddleware, where the session was read
            patch_vary_headers(response, ("Cookie",))
        return response


class AuthenticationMiddlewareExceptApi(AuthenticationMiddleware):
    """No session user under `/api/v1` (always anonymous there: no cookies); DRF sets `request.user` to the API
    key."""

    def __call__(self, request: HttpRequest) -> Any:
        if is_api_path(request.path_info):
            return self.get_response(request)
        return super().__call__(request)


class MessageMiddlewareExceptApi(MessageMiddleware):
    """No admin messages under `/api/v1` (nothing there adds one, and their cookie would be dropped)."""

    def __call__(self, request: HttpRequest) -> Any:
        if is_api_path(request.path_info):
            return self.get_response(request)
        return super().__call__(request)
