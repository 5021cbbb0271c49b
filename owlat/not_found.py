"""Operators never see Django's debug 404 page.

* `/` redirects to the admin (the back-office is the product UI, D-12); unfold's "View site" points there too.
* `FriendlyNotFoundMiddleware` replaces Django's technical 404 page (shown with `DEBUG` on, e.g. under `make run`)
  with the `404.html` page, which links back to the admin. With `DEBUG` off Django renders `404.html` itself.
  Only HTML 404s outside the API are touched: API 404s keep their JSON error envelope.
"""

from __future__ import annotations

from collections.abc import Callable

from django.http import HttpRequest, HttpResponse, HttpResponseNotFound, HttpResponseRedirect
from django.template import loader
from django.urls import reverse

DEBUG_PAGE_MARKER = b"DEBUG = True"


def root_redirect(request: HttpRequest) -> HttpResponse:
    return HttpResponseRedirect(reverse("admin:index"))


class FriendlyNotFoundMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if (
            response.status_code == 404
            and not request.path.startswith("/api/")
            and response.get("Content-Type", "").startswith("text/html")
            and not getattr(response, "streaming", False)
            and DEBUG_PAGE_MARKER in response.content
        ):
            page = loader.render_to_string("404.html", {"request_path": request.path}, request)
            return HttpResponseNotFound(page)
        return response
