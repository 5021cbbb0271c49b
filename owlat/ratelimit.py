"""A token bucket shared by every process (API-04 per key; D-06 pool pacing): in PostgreSQL, or in Redis when
`REDIS_URL` is set (one atomic Lua script per take through the `redis` package; keys under
`REDIS_KEY_PREFIX`, expiring once the bucket would be full again).

`now` may be injected (tests, benchmarks); it is a Unix time in seconds.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.db import IntegrityError, connection, transaction

from owlat.models import RateBucket
from owlat.sql import rate_bucket_take


@dataclass(frozen=True)
class Take:
    allowed: bool
    remaining: float  # tokens left after this take
    wait_seconds: float  # until one token is free (0 when allowed)
    full_in_seconds: float  # until the bucket is full again


def take_token(
    key: str, *, rate: float, capacity: float, now: float | None = None, cost: float = 1.0
) -> Take:
    """Take `cost` tokens from bucket `key` if there are enough. `rate` 0 means unlimited."""
    if rate <= 0:
        return Take(True, capacity, 0.0, 0.0)
    now = time.time() if now is None else now
    if getattr(settings, "REDIS_URL", ""):
        before, tokens = _take_redis(key, rate=rate, capacity=capacity, now=now, cost=cost)
        return take_result(before, tokens, rate=rate, capacity=capacity, cost=cost)
    if connection.vendor == "postgresql":
        row = rate_bucket_take(key, rate=rate, capacity=capacity, now=now, cost=cost)
        if row is not None:
            return take_result(*row, rate=rate, capacity=capacity, cost=cost)
    return _take_orm(key, rate=rate, capacity=capacity, now=now, cost=cost)


def take_result(before: float, tokens: float, *, rate: float, capacity: float, cost: float = 1.0) -> Take:
    """The `Take` of a refill-and-take that found `before` tokens and left `tokens`."""
    allowed = before >= cost
    wait = 0.0 if allowed else (cost - tokens) / rate
    return Take(allowed, tokens, wait, (capacity - tokens) / rate)


# The same refill-and-take as `owlat.sql.rate_bucket_take_ctes`, atomic in Redis; numbers travel as strings (Lua would truncate them).
_TAKE_LUA = """
local rate = tonumber(ARGV[1])
local capacity = tonumber(ARGV[2])
local now = tonumber(ARGV[3])
local cost = tonumber(ARGV[4])
local old = redis.call('HMGET', KEYS[1], 'tokens', 'ts')
local tokens = tonumber(old[1])
local ts = tonumber(old[2])
if tokens == nil or ts == nil then
    tokens = capacity
    ts = now
end
local t = math.min(capacity, tokens + math.max(0, now - ts) * rate)
local left = t
if t >= cost then
    left = t - cost
end
redis.call('HSET', KEYS[1], 'tokens', string.format('%.17g', left), 'ts', string.format('%.17g', math.max(now, ts)))
redis.call('EXPIRE', KEYS[1], math.ceil((capacity - left) / rate) + 60)
return {string.format('%.17g', t), string.format('%.17g', left)}
"""
_redis_scripts: dict[str, Any] = {}


def _take_redis(key: str, *, rate: float, capacity: float, now: float, cost: float) -> tuple[float, float]:
    """(tokens before the take, tokens after) from the bucket in Redis."""
    url = settings.REDIS_URL
    script = _redis_scripts.get(url)
    if script is None:
        import redis

        script = redis.Redis.from_url(url, socket_timeout=5).register_script(_TAKE_LUA)
        _redis_scripts[url] = script
    prefix = getattr(settings, "REDIS_KEY_PREFIX", "owlat:")
    before, after = script(keys=[f"{prefix}bucket:{key}"], args=[rate, capacity, repr(now), cost])
    return float(before), float(after)


def _take_orm(key: str, *, rate: float, capacity: float, now: float, cost: float) -> Take:
    """Portable form (SQLite, and the first take of a bucket on PostgreSQL)."""
    with transaction.atomic():
        bucket = RateBucket.objects.select_for_update().filter(key=key).first()
        if bucket is None:
            try:
                with transaction.atomic():
                    bucket = RateBucket.objects.create(key=key, tokens=capacity, updated_at=now)
            except IntegrityError:
                bucket = RateBucket.objects.select_for_update().get(key=key)
        elapsed = max(0.0, now - bucket.updated_at)
        tokens = min(capacity, bucket.tokens + elapsed * rate)
        allowed = tokens >= cost
        if allowed:
            tokens -= cost
        RateBucket.objects.filter(key=key).update(tokens=tokens, updated_at=max(now, bucket.updated_at))
    wait = 0.0 if allowed else (cost - tokens) / rate
    return Take(allowed, tokens, wait, (capacity - tokens) / rate)


def wait_for_token(
    key: str,
    *,
    rate: float,
    capacity: float,
    sleep=time.sleep,
    clock=time.time,
    max_wait: float | None = None,
) -> float | None:
    """Block until a token is taken; returns the seconds waited (pool pacing). With `max_wait`, gives up
    (None, no token taken) when the token would not be free within that many seconds — a job checks its time
    budget while it waits."""
    waited = 0.0
    while True:
        result = take_token(key, rate=rate, capacity=capacity, now=clock())
        if result.allowed:
            return waited
        pause = max(result.wait_seconds, 0.001)
        if max_wait is not None and waited + pause > max_wait:
            return None
        sleep(pause)
        waited += pause
