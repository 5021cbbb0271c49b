"""Requests whose path begins with several slashes (`//api/v1/contacts`: an SDK configured with a base URL ending
in `/` joins it with `/api/v1/…`, as both official SDKs do) are served as the single-slash path, so they reach
the API and get its JSON answers instead of the HTML 404 page. Only the leading run is collapsed; the rest of
the path is left as sent."""

from __future__ import annotations

from collections.abc import Callable

from django.http import HttpRequest, HttpResponse


class CollapseLeadingSlashesMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if request.path_info.startswith("//"):
            request.path_info = "/" + request.path_info.lstrip("/")
            request.path = request.META.get("SCRIPT_NAME", "").rstrip("/") + request.path_info
        return self.get_response(request)
