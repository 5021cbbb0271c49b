"""API key authentication (DOM-03, API-02) and the per-key rate limit (API-04)."""

from __future__ import annotations

import datetime as dt
import math
import re
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from django.conf import settings
from django.db import connection
from django.db.models import Q
from django.http import HttpRequest
from django.utils import timezone

from owlat.api.errors import ApiError
from owlat.apikeys import KEY_FORMAT, MIN_KEY_LENGTH
from owlat.ids import PrimaryKey
from owlat.models import ApiKey

if TYPE_CHECKING:
    from owlat.ratelimit import Take

MISSING_HEADER = "Missing or invalid Authorization header. Use: Authorization: Bearer <api_key>"
INVALID_FORMAT = "Invalid API key format"
INVALID_KEY = "Invalid API key"
LAST_USED_GRANULARITY = dt.timedelta(minutes=1)
_BEARER = re.compile(r"^bearer\s+(\S+)$", re.IGNORECASE)


def clock() -> float:
    """The limiter's clock (Unix seconds); tests may replace it to drive the bucket deterministically."""
    return time.time()


def unauthenticated(message: str) -> ApiError:
    return ApiError("unauthenticated", message)


def raw_key_from_request(request: HttpRequest) -> str | None:
    """`Bearer <key>` (scheme case-insensitive) or a bare `<key>`; any other form counts as missing."""
    # from META, as `request.headers` would give it (building that mapping of every header cost more than the
    # lookup)
    header = (request.META.get("HTTP_AUTHORIZATION") or "").strip()
    if not header:
        return None
    match = _BEARER.match(header)
    if match:
        return match.group(1)
    if any(ch.isspace() for ch in header) or header.lower() == "bearer":
        return None
    return header


def _raw_key(request: HttpRequest) -> str:
    """The request's raw key, or the DOM-03 401s that need no database ("missing", "invalid format")."""
    raw = raw_key_from_request(request)
    if raw is None:
        raise unauthenticated(MISSING_HEADER)
    if len(raw) < MIN_KEY_LENGTH or not KEY_FORMAT.match(raw):
        raise unauthenticated(INVALID_FORMAT)
    return raw


def authenticate_request(request: HttpRequest) -> ApiKey:
    """The request's API key, or the DOM-03 401 in check order."""
    from owlat.apikeys import api_key_authenticate

    key = api_key_authenticate(_raw_key(request))
    if key is None:
        raise unauthenticated(INVALID_KEY)
    touch_last_used(key)
    return key


def authenticate_request_and_take(request: HttpRequest) -> tuple[ApiKey, RateState]:
    """`authenticate_request` followed by `take_request_token` for the key: one statement on PostgreSQL without
    Redis (the lookup and the take were two round trips on every API request). Same 401s, same bucket
    and the same state as the two calls; no token is taken for a refused key."""
    from owlat.apikeys import api_key_authenticate_and_take

    rate = rate_limit_per_second()
    if rate <= 0 or settings.REDIS_URL or connection.vendor != "postgresql":
        key = authenticate_request(request)
        return key, take_request_token(key)
    raw = _raw_key(request)
    capacity = float(settings.API_RATE_LIMIT_BURST)
    now = clock()
    found, took = api_key_authenticate_and_take(
        raw, bucket_prefix=BUCKET_PREFIX, rate=rate, capacity=capacity, now=now
    )
    if found is None:
        raise unauthenticated(INVALID_KEY)
    key = found
    touch_last_used(key)
    if took is None:  # the key's first take creates its bucket
        return key, take_request_token(key, now=now)
    from owlat.ratelimit import take_result

    return key, _rate_state(take_result(*took, rate=rate, capacity=capacity), rate=rate, now=now)


def touch_last_used(key: ApiKey, *, now: dt.datetime | None = None) -> None:
    """Best effort, at most once a minute per key (a conditional UPDATE; racing requests write once)."""
    now = now or timezone.now()
    if key.last_used_at is not None and now - key.last_used_at < LAST_USED_GRANULARITY:
        return
    try:
        _touch(key.pk, now)
    except Exception:  # best effort: never fail a request over bookkeeping
        return
    key.last_used_at = now


def _touch(key_id: PrimaryKey, now: dt.datetime) -> None:
    """The conditional UPDATE of `touch_last_used` (the ORM on every database: it runs at most once a minute
    per key, so a written-out form saves nothing measurable)."""
    ApiKey.objects.filter(pk=str(key_id)).filter(
        Q(last_used_at__isnull=True) | Q(last_used_at__lt=now - LAST_USED_GRANULARITY)
    ).update(last_used_at=now)


# --- rate limit (API-04) ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class RateState:
    allowed: bool
    limit: int
    remaining: int
    reset: int  # Unix seconds when the bucket is full again
    retry_after: int  # whole seconds until a token is free (>= 1), meaningful when not allowed

    def headers(self) -> dict[str, str]:
        return {
            "X-RateLimit-Limit": str(self.limit),
            "X-RateLimit-Remaining": str(self.remaining),
            "X-RateLimit-Reset": str(self.reset),
        }


def rate_limit_message() -> str:
    limit = rate_limit_per_second()
    return f"Rate limit exceeded. Maximum {_fmt_number(limit)} requests per second."


def rate_limit_per_second() -> float:
    return float(settings.API_RATE_LIMIT_PER_SECOND)


def _fmt_number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else str(value)


BUCKET_PREFIX = "api:"


def bucket_key(key: ApiKey) -> str:
    return f"{BUCKET_PREFIX}{key.pk}"


def take_request_token(key: ApiKey, *, now: float | None = None) -> RateState:
    """Take one token from the key's shared bucket (10/s, burst 15 by default)."""
    from owlat.ratelimit import take_token

    rate = rate_limit_per_second()
    capacity = float(settings.API_RATE_LIMIT_BURST)
    now = clock() if now is None else now
    take = take_token(bucket_key(key), rate=rate, capacity=capacity, now=now)
    return _rate_state(take, rate=rate, now=now)


def _rate_state(take: Take, *, rate: float, now: float) -> RateState:
    remaining = 0 if not take.allowed else max(0, math.floor(take.remaining + 1e-9))
    return RateState(
        allowed=take.allowed,
        limit=int(rate) if rate >= 1 else 1,
        remaining=remaining,
        reset=math.ceil(now + take.full_in_seconds),
        retry_after=max(1, math.ceil(take.wait_seconds - 1e-9)) if not take.allowed else 0,
    )


def rate_limited_error(state: RateState) -> ApiError:
    return ApiError(
        "rate_limited",
        rate_limit_message(),
        {"retryAfter": state.retry_after},
        headers={"Retry-After": str(state.retry_after)},
    )
