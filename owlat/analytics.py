"""DOM-16 product analytics through the real posthog client.

`capture()` runs after commit, never blocks or fails the caller, and is a no-op without POSTHOG_API_KEY.
"""

from __future__ import annotations

import logging
from functools import lru_cache
from typing import Any

from django.conf import settings
from django.db import transaction

logger = logging.getLogger(__name__)


@lru_cache(maxsize=1)
def _client() -> Any:
    from posthog import Posthog

    key = settings.POSTHOG_API_KEY
    return Posthog(
        key or "disabled",
        host=settings.POSTHOG_HOST,
        disabled=not key,
        sync_mode=settings.POSTHOG_SYNC_MODE,
        timeout=5,
        max_retries=1,
    )


def reset_client() -> None:
    """Forget the cached client (settings changed, e.g. in tests)."""
    _client.cache_clear()


def analytics_enabled() -> bool:
    return bool(settings.POSTHOG_API_KEY)


def capture(*, distinct_id: str, event: str, properties: dict[str, Any] | None = None) -> None:
    """Queue an analytics event for after the current transaction commits."""
    if not analytics_enabled():
        return
    props = dict(properties or {})

    def send() -> None:
        try:
            _client().capture(event, distinct_id=str(distinct_id), properties=props)
        except Exception:  # analytics never fails the caller
            logger.exception("posthog capture failed for %s", event)

    transaction.on_commit(send)
