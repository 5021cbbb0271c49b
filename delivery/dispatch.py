"""The dispatch helper (DLV-17): the only place that talks to a provider.

Pool jobs use `send_provider_attempt` (refining DLV-15/DLV-17): one attempt per call; a
retryable refusal with attempts left returns `retry_after_ms` (the provider's next delay, 1/5/30 s) instead of
sleeping, and the worker releases the row and re-queues it as a due task, so a batch never sleeps through
django-q2's timeout and one slow recipient does not stall the pool. Every attempt takes a pacing token (D-06)
in the job that makes it.

It makes `1 + len(retry_delays)` attempts in all and retries only on `RATE_LIMIT` and `SERVER_ERROR`; every
other code ends at once. A request that may have been accepted (`AMBIGUOUS_TIMEOUT`, D-07/D-08) is never
retried. After the final attempt it records provider health (success, latency; delivery.health).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from delivery.health import provider_health_record
from delivery.messages import OutgoingMessage
from delivery.providers import DispatchError, Transport

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class DispatchResult:
    ok: bool
    provider_type: str
    attempts: int
    latency_ms: int
    provider_message_id: str | None = None
    error_code: str | None = None
    error_message: str | None = None
    outcome_unknown: bool = False
    retry_after_ms: int | None = None


def send_provider_attempt(
    transport: Transport,
    message: OutgoingMessage,
    *,
    prior_attempts: int,
    retry_delays_ms: Sequence[int],
    clock: Callable[[], float] = time.monotonic,
) -> DispatchResult:
    """Attempt number `prior_attempts + 1` of `1 + len(retry_delays_ms)`. On a retryable refusal with attempts
    left the result carries `retry_after_ms` and no health is recorded yet (DLV-17 records after the final
    attempt); otherwise the result is final."""
    started = clock()
    attempts = prior_attempts + 1
    try:
        provider_message_id = transport.send(message)
    except DispatchError as exc:
        latency_ms = int((clock() - started) * 1000)
        logger.info(
            "dispatch attempt %s of %s to %s failed: %s %s",
            attempts,
            1 + len(retry_delays_ms),
            message.to,
            exc.code,
            exc.message,
        )
        retry = exc.retryable and not exc.on_wire and prior_attempts < len(retry_delays_ms)
        result = DispatchResult(
            ok=False,
            provider_type=transport.provider_type,
            attempts=attempts,
            latency_ms=latency_ms,
            error_code=exc.code,
            error_message=exc.message,
            outcome_unknown=exc.on_wire,
            retry_after_ms=retry_delays_ms[prior_attempts] if retry else None,
        )
        if not retry:
            _record_health(result)
        return result
    result = DispatchResult(
        ok=True,
        provider_type=transport.provider_type,
        attempts=attempts,
        latency_ms=int((clock() - started) * 1000),
        provider_message_id=provider_message_id,
    )
    _record_health(result)
    return result


def _record_health(result: DispatchResult) -> None:
    """DLV-17: after the final attempt, provider health (success, latency) — an in-process tally."""
    provider_health_record(
        provider=result.provider_type,
        ok=result.ok,
        latency_ms=result.latency_ms,
        attempts=result.attempts,
        error_code=result.error_code,
        outcome_unknown=result.outcome_unknown,
    )
