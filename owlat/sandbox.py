"""Tenant-written HTML, served inert on the app's origin.

HTML that an organization wrote (templates, campaign snapshots) or that a stranger sent (inbound mail) is never
part of one of our pages. It is served on its own, by `sandboxed_response`, with the header

    Content-Security-Policy: sandbox allow-popups allow-popups-to-escape-sandbox; default-src 'none'; …

so the browser gives the document an opaque origin (no `allow-same-origin`): no script runs (no
`allow-scripts`), it cannot read or send the app's cookies, call the admin with the operator's session, submit
forms or navigate the page that frames it. Links still open (in a new tab, outside the sandbox). Remote images,
styles and fonts load only when `remote_content=True` (a tenant's own template); inbound mail gets
`remote_content=False`, so opening it tells its sender nothing.

Our pages show such HTML in a frame whose `src` is such a response: `sandboxed_frame(url)` in Python,
`{% sandboxed_frame url %}` in a template (`{% load owlat_sandbox %}`). Never put tenant HTML in `srcdoc`,
`mark_safe` or `|safe`: a `srcdoc` document is part of the embedding response and lives under its policy.
"""

from __future__ import annotations

from collections.abc import Callable

from django.http import HttpRequest, HttpResponse
from django.utils.html import format_html
from django.utils.safestring import SafeString

#: The sandbox flags of both the response's CSP and the frame's `sandbox` attribute: links open in a new,
#: unsandboxed tab; nothing else is allowed (no scripts, no same origin, no forms, no top navigation).
SANDBOX_FLAGS = "allow-popups allow-popups-to-escape-sandbox"
#: Flags that must never be granted to tenant HTML (`sandbox_violations`).
FORBIDDEN_FLAGS = (
    "allow-same-origin",
    "allow-scripts",
    "allow-top-navigation",
    "allow-forms",
    "allow-modals",
)


def sandbox_policy(*, remote_content: bool = True) -> str:
    """The Content-Security-Policy of a tenant-HTML response. `remote_content`: load images, styles and fonts
    from anywhere (a template's own assets) or only from the document itself (inbound mail)."""
    remote = " https: http:" if remote_content else ""
    return "; ".join(
        (
            f"sandbox {SANDBOX_FLAGS}",
            "default-src 'none'",
            "script-src 'none'",
            f"img-src data: cid:{remote}",
            f"style-src 'unsafe-inline'{remote}",
            f"font-src data:{remote}",
            "form-action 'none'",
            "base-uri 'none'",
            "frame-ancestors 'self'",
        )
    )


def sandboxed_response(html: str, *, remote_content: bool = True, status: int = 200) -> HttpResponse:
    """`html` as a document of its own under `sandbox_policy` (the site-wide policy of django-csp steps aside
    for a response that has its own). Our pages may frame it (`X-Frame-Options: SAMEORIGIN`,
    `frame-ancestors 'self'`); the Referer of its links is never sent (an archive URL carries its token)."""
    response = HttpResponse(html or "", content_type="text/html; charset=utf-8", status=status)
    response["Content-Security-Policy"] = sandbox_policy(remote_content=remote_content)
    response["X-Content-Type-Options"] = "nosniff"
    response["Referrer-Policy"] = "no-referrer"
    response["X-Frame-Options"] = "SAMEORIGIN"
    return response


def sandboxed_frame(src: str, *, title: str = "Preview", height: int = 600) -> SafeString:
    """An `<iframe sandbox>` showing `src`, a URL answered by `sandboxed_response`."""
    return format_html(
        '<iframe class="owlat-sandboxed-frame" sandbox="{}" src="{}" title="{}" referrerpolicy="no-referrer" '
        'style="width:100%;height:{}px;border:1px solid #ccc;background:#fff"></iframe>',
        SANDBOX_FLAGS,
        src,
        title,
        int(height),
    )


def sandbox_violations(policy: str | None) -> list[str]:
    """What makes `policy` (a Content-Security-Policy header value) unfit for tenant HTML: no `sandbox`
    directive, or a forbidden flag in it. Empty when the policy sandboxes the document as `sandbox_policy`."""
    directives = {}
    for part in (policy or "").split(";"):
        words = part.split()
        if words:
            directives[words[0].lower()] = [w.lower() for w in words[1:]]
    if "sandbox" not in directives:
        return ["no sandbox directive"]
    return [f"sandbox grants {flag}" for flag in FORBIDDEN_FLAGS if flag in directives["sandbox"]]


# --- public pages that neither read nor set a cookie -------------------------------------------------------

_cookieless_url_names: list[str] = []


def register_cookieless_page(url_name: str) -> None:
    """Declare the public page named `url_name` cookieless (an app's `AppConfig.ready()`): its requests reach
    the session, authentication and CSRF machinery without their cookies, and its responses set none — a
    link anyone may open (the archive) never carries, reads or changes the reader's admin session."""
    if url_name not in _cookieless_url_names:
        _cookieless_url_names.append(url_name)


class CookielessPagesMiddleware:
    """Before the session middleware in MIDDLEWARE: drops the cookies of a request to a registered cookieless
    page, and every cookie (and `Vary: Cookie`) from its response — the page cannot depend on one."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response
        self._paths: tuple[tuple[str, ...], frozenset[str]] = ((), frozenset())

    def _cookieless_paths(self) -> frozenset[str]:
        names = tuple(_cookieless_url_names)
        if self._paths[0] != names:  # reversed once the URLconf is there, again if a page is registered later
            from django.urls import reverse

            self._paths = (names, frozenset(reverse(name) for name in names))
        return self._paths[1]

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if request.path not in self._cookieless_paths():
            return self.get_response(request)
        request.COOKIES = {}
        request.META.pop("HTTP_COOKIE", None)
        response = self.get_response(request)
        response.cookies.clear()
        vary = [v.strip() for v in response.get("Vary", "").split(",") if v.strip()]
        if any(v.lower() == "cookie" for v in vary):
            kept = [v for v in vary if v.lower() != "cookie"]
            if kept:
                response["Vary"] = ", ".join(kept)
            else:
                del response["Vary"]
        return response
