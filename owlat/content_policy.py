"""The site-wide Content-Security-Policy (django-csp) and the deploy checks that keep it strong.

`settings.CONTENT_SECURITY_POLICY` is the policy of every page of ours (the admin, public pages, API docs).
Tenant-written HTML is not one of our pages: owlat.sandbox serves it under its own, sandboxed policy.

`ContentPolicyMiddleware` is django-csp's middleware with one addition: the header of a response that asks for
nothing of its own (no nonce drawn, no per-view decorator) is the same string every time, so it is built once
per process instead of for every response (about 0.1 ms each, on every API call otherwise).

The checks (tag `security`, `check --deploy`) warn when the policy is missing or weakened:
owlat.W010 no policy or middleware, owlat.W011 scripts allowed from anywhere or inline without a nonce,
owlat.W012 a protective directive missing or opened up, owlat.W013 pages excluded from the policy.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from csp.constants import HEADER
from csp.middleware import CheckableLazyObject, CSPMiddleware
from csp.utils import build_policy
from django.conf import settings
from django.core import checks
from django.core.signals import setting_changed
from django.dispatch import receiver
from django.http import HttpRequest
from django.http.response import HttpResponseBase

MIDDLEWARE_PATH = "owlat.content_policy.ContentPolicyMiddleware"
_PER_RESPONSE = (
    "_csp_config",
    "_csp_update",
    "_csp_replace",
    "_csp_exempt",
    "_csp_config_ro",
    "_csp_update_ro",
    "_csp_replace_ro",
    "_csp_exempt_ro",
)


@lru_cache(maxsize=1)
def _plain_header() -> str | None:
    """The header of a response without nonce or per-view policy; None when django-csp must decide per request
    (excluded prefixes, a report-only policy)."""
    policy = getattr(settings, "CONTENT_SECURITY_POLICY", None) or {}
    if policy.get("EXCLUDE_URL_PREFIXES") or getattr(settings, "CONTENT_SECURITY_POLICY_REPORT_ONLY", None):
        return None
    return build_policy() or None


@receiver(setting_changed)
def _clear_plain_header(*, setting: str, **kwargs: Any) -> None:
    if setting.startswith("CONTENT_SECURITY_POLICY"):
        _plain_header.cache_clear()


class ContentPolicyMiddleware(CSPMiddleware):
    def process_response(self, request: HttpRequest, response: HttpResponseBase) -> HttpResponseBase:
        header = _plain_header()
        if (
            header is None
            or getattr(request, "_csp_nonce", None) is not None
            or HEADER in response
            or (settings.DEBUG and response.status_code in (404, 500))  # django-csp leaves debug pages alone
            or any(hasattr(response, name) for name in _PER_RESPONSE)
        ):
            return super().process_response(request, response)
        response[HEADER] = header
        request.csp_nonce = CheckableLazyObject(self._csp_nonce_post_response)
        return response


# --- deploy checks ---------------------------------------------------------------------------------------------

_HINT = (
    "Keep CONTENT_SECURITY_POLICY as owlat/settings.py ships it (README, 'Security'); add a source to a "
    "directive rather than opening it up."
)
_OPEN_SCRIPT_SOURCES = ("*", "'unsafe-inline'", "http:", "https:", "data:", "blob:")


def _sources(directives: dict[str, Any], name: str) -> list[str] | None:
    value = directives.get(name)
    if value is None:
        return None
    return [value] if isinstance(value, str) else [str(v) for v in value]


def content_policy_warnings(
    policy: dict[str, Any] | None, middleware: list[str]
) -> list[checks.CheckMessage]:
    """What weakens the site-wide policy `policy` (settings.CONTENT_SECURITY_POLICY) served by `middleware`."""
    has_middleware = MIDDLEWARE_PATH in middleware or "csp.middleware.CSPMiddleware" in middleware
    directives = (policy or {}).get("DIRECTIVES") or {}
    if not has_middleware or not directives:
        return [
            checks.Warning(
                "No Content-Security-Policy is sent: "
                + (
                    "CONTENT_SECURITY_POLICY has no DIRECTIVES."
                    if has_middleware
                    else f"{MIDDLEWARE_PATH} is not in MIDDLEWARE."
                ),
                hint=_HINT,
                id="owlat.W010",
            )
        ]
    out: list[checks.CheckMessage] = []
    script = _sources(directives, "script-src") or _sources(directives, "default-src") or []
    open_sources = [s for s in script if s in _OPEN_SCRIPT_SOURCES]
    if open_sources or not script:
        out.append(
            checks.Warning(
                "The Content-Security-Policy lets scripts run from anywhere or inline: script-src "
                + (" ".join(open_sources) if open_sources else "is not restricted"),
                hint="Scripts come from 'self' or carry the request's nonce (csp.constants.NONCE). " + _HINT,
                id="owlat.W011",
            )
        )
    weakened = []
    if _sources(directives, "object-src") != ["'none'"]:
        weakened.append("object-src is not 'none'")
    for name in ("default-src", "frame-ancestors", "base-uri", "form-action"):
        sources = _sources(directives, name)
        if not sources:
            weakened.append(f"{name} is missing")
        elif "*" in sources:
            weakened.append(f"{name} allows *")
    if weakened:
        out.append(
            checks.Warning(
                "The Content-Security-Policy is weakened: " + "; ".join(weakened), hint=_HINT, id="owlat.W012"
            )
        )
    excluded = (policy or {}).get("EXCLUDE_URL_PREFIXES")
    if excluded:
        out.append(
            checks.Warning(
                f"Pages under {', '.join(excluded)} are sent without the Content-Security-Policy.",
                hint="Remove CONTENT_SECURITY_POLICY['EXCLUDE_URL_PREFIXES']. " + _HINT,
                id="owlat.W013",
            )
        )
    return out


@checks.register(checks.Tags.security, deploy=True)
def check_content_policy(app_configs: Any = None, **kwargs: Any) -> list[checks.CheckMessage]:
    return content_policy_warnings(
        getattr(settings, "CONTENT_SECURITY_POLICY", None), list(settings.MIDDLEWARE)
    )
