"""The one rule for event names (API-19 `/events` and the automation trigger `event_received.eventName`):
a letter, then letters, digits, underscores or hyphens, 100 characters at most — matched in full (a trailing
newline is not allowed, as `re.match` with `$` would have allowed)."""

from __future__ import annotations

import re
from typing import Any

EVENT_NAME_PATTERN = re.compile(r"[a-zA-Z][a-zA-Z0-9_-]{0,99}")
EVENT_NAME_RULE = "must start with a letter and contain only alphanumeric characters, underscores, or hyphens (max 100 chars)"
EVENT_NAME_MESSAGE = f"eventName {EVENT_NAME_RULE}"


def is_valid_event_name(name: Any) -> bool:
    """True if `name` is a string that is a valid event name in full."""
    return isinstance(name, str) and EVENT_NAME_PATTERN.fullmatch(name) is not None


def event_name_message(field: str = "eventName") -> str:
    """The validation message naming `field` (e.g. `triggerConfig.eventName`)."""
    return f"{field} {EVENT_NAME_RULE}"
