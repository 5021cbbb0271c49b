"""Hostile-input guard for the public pages, provider webhooks and the admin: a NUL byte in the
path, the query string or a url-encoded form field cannot be stored or looked up in PostgreSQL (psycopg raises
`ValueError`, which would answer 500), so the request is answered 400 before any view runs.

The API under `/api/` is left to the API's own parsing and error envelope (it names the field)."""

from __future__ import annotations

from collections.abc import Callable

from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest

NUL = "\x00"


def _nul_in(request: HttpRequest) -> str | None:
    if NUL in request.path:
        return "path"
    for key, values in request.GET.lists():
        if NUL in key or any(NUL in v for v in values):
            return f"query parameter {key.replace(NUL, '')!r}"
    if request.method == "POST" and request.content_type == "application/x-www-form-urlencoded":
        for key, values in request.POST.lists():
            if NUL in key or any(NUL in v for v in values):
                return f"form field {key.replace(NUL, '')!r}"
    return None


class RejectNulBytesMiddleware:
    """400 for a NUL byte anywhere a view could hand it to the database (outside the API)."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if not request.path.startswith("/api/"):
            where = _nul_in(request)
            if where is not None:
                return HttpResponseBadRequest(f"Bad request: NUL byte in {where}.", content_type="text/plain")
        return self.get_response(request)
