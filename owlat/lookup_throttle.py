"""Per-client throttling of failed secret lookups: API keys (`owlat.api.authentication`) and inbound secrets (the
raw inbound endpoint). Each failed lookup takes a token from the client's bucket in the shared token bucket
(`owlat.ratelimit`, so every process counts the same failures): `AUTH_FAILURE_RATE_PER_MINUTE` failures a minute
after a burst of `AUTH_FAILURE_BURST` (0 lifts the limit). Once the bucket is empty the client is answered 429
with `Retry-After` until a token is free again — before any lookup, so a throttled client costs no database work
and cannot keep guessing: the process remembers the bucket's "empty until" answer (`lookup_refused`), which it
learned from the shared bucket, so each process lets at most one more failure through per window.

The client is its address: `REMOTE_ADDR`, or behind `TRUSTED_PROXY_COUNT` proxies the address they saw
(`X-Forwarded-For`, counted from the right: the entries the proxies added, not what the client wrote).
"""

from __future__ import annotations

import math
import threading
import time

from django.conf import settings
from django.http import HttpRequest

_blocked: dict[str, float] = {}  # client → monotonic time its bucket has a token again
_lock = threading.Lock()
_MAX_REMEMBERED = 10_000


def client_address(request: HttpRequest) -> str:
    proxies = int(getattr(settings, "TRUSTED_PROXY_COUNT", 0) or 0)
    if proxies > 0:
        forwarded = [
            a.strip() for a in (request.META.get("HTTP_X_FORWARDED_FOR") or "").split(",") if a.strip()
        ]
        if len(forwarded) >= proxies:
            return forwarded[-proxies]
    return str(request.META.get("REMOTE_ADDR") or "unknown")


def _rate() -> tuple[float, float]:
    return float(settings.AUTH_FAILURE_RATE_PER_MINUTE) / 60.0, float(settings.AUTH_FAILURE_BURST)


def lookup_refused(request: HttpRequest, *, now: float | None = None) -> int | None:
    """Seconds (≥ 1) this client must wait before its next lookup, or None when it may try (no database)."""
    if _rate()[0] <= 0:
        return None
    now = time.monotonic() if now is None else now
    client = client_address(request)
    with _lock:
        until = _blocked.get(client)
        if until is None:
            return None
        if until <= now:
            del _blocked[client]
            return None
    return max(1, math.ceil(until - now))


def lookup_failed(request: HttpRequest, *, now: float | None = None) -> int | None:
    """Record a failed lookup; returns the seconds to wait when the client's failures are over the limit (answer
    429 instead of 401), else None."""
    from owlat.ratelimit import take_token

    rate, burst = _rate()
    if rate <= 0:
        return None
    client = client_address(request)
    take = take_token(f"lookupfail:{client}", rate=rate, capacity=burst)
    if take.allowed:
        return None
    wait = max(1, math.ceil(take.wait_seconds))
    now = time.monotonic() if now is None else now
    with _lock:
        if len(_blocked) >= _MAX_REMEMBERED:
            for key in [k for k, until in _blocked.items() if until <= now] or list(_blocked)[
                : _MAX_REMEMBERED // 2
            ]:
                _blocked.pop(key, None)
        _blocked[client] = now + wait
    return wait


def forget(client: str | None = None) -> None:
    """Drop what this process remembers (one client, or all): tests, and `manage.py`-driven unblocking."""
    with _lock:
        if client is None:
            _blocked.clear()
        else:
            _blocked.pop(client, None)
