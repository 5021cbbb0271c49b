"""Provider webhooks (DLV-19, D-09): django-anymail's tracking endpoints verify each provider's signature and
normalize its events; `anymail.signals.tracking` is the library's integration point, and its receiver here is
one call into `provider_event_record`, which maps the event onto the send lifecycle by provider message id.
Unknown ids and refused transitions are acknowledged quietly (anymail answers 200); replays are harmless
because the lifecycle answers a repeated event with `duplicate` (or `recorded` for opens and clicks)."""

from __future__ import annotations

import logging
import re
from typing import Any

from anymail.signals import tracking
from django.dispatch import receiver

from delivery.lifecycle import transition_by_provider_message_id
from owlat.lifecycle import Outcome

logger = logging.getLogger(__name__)

_SOFT_TYPES = {"softbounce", "transient", "temporary", "soft", "soft_bounce", "soft-bounce", "deferred"}
_FAILED_CODES = {
    "invalid": "INVALID_RECIPIENT",
    "bounced": "INVALID_RECIPIENT",
    "blocked": "CONTENT_REJECTED",
    "spam": "CONTENT_REJECTED",
    "unsubscribed": "INVALID_RECIPIENT",
}


def _find_type(raw: Any, depth: int = 0) -> str | None:
    if depth > 4:
        return None
    if isinstance(raw, dict):
        for key in ("Type", "bounceType", "severity", "bounce_classification", "type"):
            value = raw.get(key)
            if isinstance(value, str) and value.strip().lower() in _SOFT_TYPES:
                return value.strip().lower()
        for value in raw.values():
            found = _find_type(value, depth + 1)
            if found:
                return found
    elif isinstance(raw, list):
        for value in raw[:10]:
            found = _find_type(value, depth + 1)
            if found:
                return found
    return None


def classify_bounce(event: Any) -> str:
    """`soft` for temporary failures (provider type, or a 4xx / 4.x.x MTA response), else `hard`."""
    if _find_type(getattr(event, "esp_event", None)):
        return "soft"
    response = (getattr(event, "mta_response", None) or "").strip()
    if re.match(r"^4\d\d\b", response) or re.search(r"\b4\.\d{1,3}\.\d{1,3}\b", response):
        return "soft"
    return "hard"


def provider_event_record(*, esp_name: str, event: Any) -> Outcome | None:
    """Map one normalized anymail tracking event to a send-lifecycle input (None: not a lifecycle event)."""
    message_id = getattr(event, "message_id", None)
    if not message_id:
        return None
    at = getattr(event, "timestamp", None)
    kind = getattr(event, "event_type", None)
    base: dict[str, Any] = {"at": at} if at is not None else {}
    if kind == "delivered":
        return transition_by_provider_message_id(message_id, "delivered", base)
    if kind == "opened":
        return transition_by_provider_message_id(message_id, "opened", base)
    if kind == "clicked":
        return transition_by_provider_message_id(
            message_id, "clicked", {**base, "url": event.click_url or ""}
        )
    if kind == "complained":
        return transition_by_provider_message_id(message_id, "complained", base)
    if kind == "bounced":
        message = event.description or event.mta_response or None
        return transition_by_provider_message_id(
            message_id,
            "bounced",
            {**base, "bounce_type": classify_bounce(event), "bounce_message": message},
        )
    if kind in ("rejected", "failed"):
        code = _FAILED_CODES.get(getattr(event, "reject_reason", None) or "", "UNKNOWN")
        return transition_by_provider_message_id(
            message_id,
            "failed",
            {**base, "error_code": code, "error_message": event.description or event.mta_response or kind},
        )
    return None


@receiver(tracking, dispatch_uid="owlat.delivery.tracking")
def _on_tracking(sender: Any, event: Any, esp_name: str, **kwargs: Any) -> None:
    outcome = provider_event_record(esp_name=esp_name, event=event)
    if outcome is not None and not outcome.ok:
        logger.info(
            "%s webhook event %s for %s: %s", esp_name, event.event_type, event.message_id, outcome.reason
        )
