"""Test support for `/api/v1` tests (not imported by production code).

`ApiClient(raw_key)` wraps Django's test client the way the SDKs call the API: `Authorization: Bearer <key>`
and `Content-Type: application/json` on every request, bodies as raw JSON bytes. `make_org()` / `make_key()`
build an organization and a key; `api_routes()` lists the routed endpoints. Other apps' API tests may use
them too.
"""

from __future__ import annotations

import json
from typing import Any

from django.test import Client

SDK_SCOPES = ["contacts:read", "contacts:write", "events:write", "transactional:send", "topics:write"]
ALL_KERNEL_SCOPES = [
    *SDK_SCOPES,
    "topics:read",
    "topics:manage",
    "segments:read",
    "segments:write",
]


def api_routes() -> list[tuple[str, Any]]:
    """Every routed `/api/v1` endpoint of the project's URLconf as (route pattern, view class — or the view
    function where there is no class), e.g. `("api/v1/topics/<str:topic_id>", TopicDetailView)`."""
    from django.urls import URLPattern, URLResolver, get_resolver

    def walk(patterns: Any, prefix: str = "") -> Any:
        for pattern in patterns:
            if isinstance(pattern, URLResolver):
                yield from walk(pattern.url_patterns, prefix + str(pattern.pattern))
            elif isinstance(pattern, URLPattern):
                yield prefix + str(pattern.pattern), pattern.callback

    return [
        (route, getattr(callback, "view_class", None) or callback)
        for route, callback in walk(get_resolver().url_patterns)
        if route.startswith("api/v1/")
    ]


def make_org(name: str = "Acme", **settings_fields: Any):
    from owlat.organizations import organization_create

    return organization_create(name=name, **settings_fields)


def make_key(org, scopes: list[str] | None = None, **kwargs: Any) -> tuple[Any, str]:
    """(ApiKey, raw key)."""
    from owlat.apikeys import api_key_create

    return api_key_create(
        organization_id=org.pk, name=kwargs.pop("name", "test"), scopes=scopes or ALL_KERNEL_SCOPES, **kwargs
    )


def refill_bucket(api_key) -> None:
    """Forget a key's rate-limit bucket (tests that are not about the limiter make many quick requests)."""
    from owlat.api.auth import bucket_key
    from owlat.models import RateBucket

    RateBucket.objects.filter(key=bucket_key(api_key)).delete()


class ApiClient:
    """Requests as the SDKs send them."""

    def __init__(self, raw_key: str | None = None, *, client: Client | None = None, prefix: str = "/api/v1"):
        self.raw_key = raw_key
        self.client = client or Client()
        self.prefix = prefix

    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        raw: bytes | str | None = None,
        headers: dict[str, str] | None = None,
        content_type: str | None = "application/json",
        auth: bool = True,
    ):
        all_headers: dict[str, str] = {}
        if auth and self.raw_key is not None:
            all_headers["Authorization"] = f"Bearer {self.raw_key}"
        all_headers.update(headers or {})
        if raw is not None:
            data: bytes | str = raw
        elif body is not None:
            data = json.dumps(body)
        else:
            data = b""
        url = path if path.startswith("/") and path.startswith(self.prefix) else f"{self.prefix}{path}"
        kwargs: dict[str, Any] = {"headers": all_headers}
        if content_type is not None:
            kwargs["content_type"] = content_type
        return self.client.generic(method.upper(), url, data, **kwargs)

    def get(self, path: str, **kw: Any):
        return self.request("GET", path, **kw)

    def post(self, path: str, body: Any = None, **kw: Any):
        return self.request("POST", path, body, **kw)

    def put(self, path: str, body: Any = None, **kw: Any):
        return self.request("PUT", path, body, **kw)

    def patch(self, path: str, body: Any = None, **kw: Any):
        return self.request("PATCH", path, body, **kw)

    def delete(self, path: str, **kw: Any):
        return self.request("DELETE", path, **kw)

    def options(self, path: str, **kw: Any):
        return self.request("OPTIONS", path, auth=False, **kw)


class SdkClient:
    """What `@owlat/sdk-js` / `owlat-sdk` put on the wire, over real HTTP (`requests`) to `base_url`:
    `Authorization: Bearer <key>` (`key=None`: none) and `Content-Type: application/json` on every request."""

    def __init__(self, base_url: str, key: str | None = None) -> None:
        self.base = f"{base_url}/api/v1"
        self.key = key

    def call(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        key: str | None = "default",
        params: dict[str, Any] | None = None,
        headers: dict[str, str] | None = None,
    ):
        import requests

        all_headers = {"Content-Type": "application/json"}
        key = self.key if key == "default" else key
        if key is not None:
            all_headers["Authorization"] = f"Bearer {key}"
        all_headers.update(headers or {})
        return requests.request(
            method,
            self.base + path,
            data=json.dumps(body).encode() if body is not None else None,
            headers=all_headers,
            params=params,
            allow_redirects=False,
            timeout=30,
        )


def error_of(response) -> dict[str, Any]:
    """The `error` object of an error response."""
    return response.json()["error"]
