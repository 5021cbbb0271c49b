"""Pool pacing (D-06): the token bucket every worker process on every host shares, one token per attempt."""

from __future__ import annotations

import time
from collections.abc import Callable

from django.conf import settings


def pool_rate(pool: str) -> float:
    if pool == "campaign":
        return float(getattr(settings, "DELIVERY_CAMPAIGN_RATE", 20.0) or 0.0)
    return float(getattr(settings, "DELIVERY_TRANSACTIONAL_RATE", 30.0) or 0.0)


def pool_bucket_key(pool: str) -> str:
    return f"delivery:pool:{pool}"


class Pacer:
    """D-06: the pool's token bucket, shared by every worker process on every host; burst of one second.
    `pacer(within=s)` gives up (False, no token taken) when no token is free within `s` seconds, so a job
    checks its time budget while it waits."""

    def __init__(
        self,
        pool: str,
        *,
        rate: float | None = None,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.pool = pool
        self.rate = pool_rate(pool) if rate is None else rate
        self.sleep = sleep
        self.clock = clock
        self.waited = 0.0

    def __call__(self, within: float | None = None) -> bool:
        if self.rate <= 0:
            return True
        from owlat.ratelimit import wait_for_token

        waited = wait_for_token(
            pool_bucket_key(self.pool),
            rate=self.rate,
            capacity=max(self.rate, 1.0),
            sleep=self.sleep,
            clock=self.clock,
            max_wait=within,
        )
        if waited is None:
            return False
        self.waited += waited
        return True


def take_pool_token(pace: Callable[..., object], within: float) -> bool:
    """Take the next attempt's token within `within` seconds; a plain callable (tests) always succeeds."""
    if isinstance(pace, Pacer):
        return pace(within=max(within, 0.0))
    pace()
    return True
