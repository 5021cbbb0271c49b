"""A token bucket shared by every process through the database (API-04 per key; D-06 pool pacing).

`now` may be injected (tests, benchmarks); it is a Unix time in seconds.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from django.db import IntegrityError, transaction

from owlat.models import RateBucket


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


def wait_for_token(key: str, *, rate: float, capacity: float, sleep=time.sleep, clock=time.time) -> float:
    """Block until a token is taken; returns the seconds waited (pool pacing)."""
    waited = 0.0
    while True:
        result = take_token(key, rate=rate, capacity=capacity, now=clock())
        if result.allowed:
            return waited
        pause = max(result.wait_seconds, 0.001)
        sleep(pause)
        waited += pause
