"""The bot defences of a sign-up post, none of them a third-party service: a honeypot field, a minimum fill time
proven by a signed timestamp the page carries, per-client and per-form rate limits in the shared token bucket
(`owlat.ratelimit`, clients told apart as `owlat.lookup_throttle.client_address` does), and an origin check
(browsers name the page's origin on every cross-site post; a post from a site the operator did not list is
refused, so nobody can sign visitors up from a page of theirs).

Each check returns the refusal reason or None; the caller answers every refusal with the same neutral answer.
"""

from __future__ import annotations

import time
from typing import Any
from urllib.parse import urlsplit

from django.conf import settings
from django.core import signing
from django.http import HttpRequest

from owlat.lookup_throttle import client_address
from owlat.ratelimit import take_token

HONEYPOT_FIELD = "website"
TIMESTAMP_FIELD = "_ts"
_TS_SALT = "owlat.signup.timestamp"

HONEYPOT, TOO_FAST, STALE, RATE_LIMIT, ORIGIN = "honeypot", "too_fast", "stale", "rate_limit", "origin"


def setting(name: str, default: float) -> float:
    return float(getattr(settings, name, default))


def timestamp_new(form_id: Any, *, now: float | None = None) -> str:
    """The signed time (in milliseconds) a page showed form `form_id`."""
    return signing.dumps([str(form_id), int(1000 * (time.time() if now is None else now))], salt=_TS_SALT)


def check_timestamp(form_id: Any, value: Any, *, now: float | None = None) -> str | None:
    """`too_fast` when the form came back sooner than the minimum fill time, `stale` when the timestamp is
    missing, forged or older than the maximum age (the page is shown again with a fresh one), else None."""
    if not isinstance(value, str) or not value or len(value) > 200:
        return STALE
    try:
        signed_form, shown_at = signing.loads(value, salt=_TS_SALT)
    except (signing.BadSignature, ValueError, TypeError):
        return STALE
    if signed_form != str(form_id) or not isinstance(shown_at, int):
        return STALE
    age = (time.time() if now is None else now) - shown_at / 1000
    if age < setting("SIGNUP_MIN_FILL_SECONDS", 3):
        return TOO_FAST
    if age > setting("SIGNUP_MAX_FORM_AGE_SECONDS", 86400):
        return STALE
    return None


def check_honeypot(data: Any) -> str | None:
    return HONEYPOT if str(data.get(HONEYPOT_FIELD) or "").strip() else None


def request_origin(request: HttpRequest) -> str | None:
    """The origin the browser names (`Origin`, else the `Referer`'s), lower-cased; None from non-browsers."""
    origin = request.headers.get("Origin")
    if origin and origin != "null":
        return origin.strip().rstrip("/").lower()
    referer = request.headers.get("Referer")
    if referer:
        parts = urlsplit(referer)
        if parts.scheme and parts.netloc:
            return f"{parts.scheme}://{parts.netloc}".lower()
    return "null" if origin == "null" else None


def own_origin(request: HttpRequest) -> str:
    site = (getattr(settings, "SITE_URL", "") or "").rstrip("/")
    parts = urlsplit(site)
    return (
        f"{parts.scheme}://{parts.netloc}".lower() if parts.netloc else request.build_absolute_uri("/")[:-1]
    )


def origin_allowed(request: HttpRequest, allowed: list[str]) -> bool:
    """A post without an origin (not a browser) or from our own pages or from a listed origin."""
    origin = request_origin(request)
    if origin is None:
        return True
    return origin in allowed or origin in (own_origin(request), request.build_absolute_uri("/")[:-1].lower())


def check_origin(request: HttpRequest, allowed: list[str]) -> str | None:
    return None if origin_allowed(request, allowed) else ORIGIN


def check_rate(request: HttpRequest, form_id: Any) -> str | None:
    """Take a token from the client's bucket, then from the form's; `rate_limit` when either is empty."""
    buckets = (
        (f"signup:ip:{client_address(request)}", "SIGNUP_IP_RATE_PER_MINUTE", 6, "SIGNUP_IP_BURST", 10),
        (f"signup:form:{form_id}", "SIGNUP_FORM_RATE_PER_MINUTE", 120, "SIGNUP_FORM_BURST", 300),
    )
    for key, rate_name, rate_default, burst_name, burst_default in buckets:
        rate = setting(rate_name, rate_default) / 60.0
        if rate > 0 and not take_token(key, rate=rate, capacity=setting(burst_name, burst_default)).allowed:
            return RATE_LIMIT
    return None
