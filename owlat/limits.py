"""Size limits on what clients send: each a setting with a sane default, each refusal naming the field and the
limit, each checked before any per-key work (a 20,000-key object costs one `len()` and one `json.dumps`, not a
validation — or a database round trip — per key).

| what | settings (default) |
| --- | --- |
| contact properties (API, admin, CSV columns) | `CONTACT_PROPERTIES_MAX_KEYS` (200), `CONTACT_PROPERTIES_MAX_BYTES` (64 KiB) |
| event properties | `EVENT_PROPERTIES_MAX_KEYS` (200), `EVENT_PROPERTIES_MAX_BYTES` (64 KiB) |
| transactional data variables | `TRANSACTIONAL_DATA_MAX_KEYS` (500), `TRANSACTIONAL_DATA_MAX_BYTES` (256 KiB) |
| an inbound message | `INBOX_MAX_MESSAGE_BYTES` (10 MiB) |
| a CSV import | `IMPORT_MAX_BYTES` (15 MiB), `IMPORT_MAX_ROWS` (100,000) |

The size of an object is its compact JSON in UTF-8 (keys included), what it costs to store.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from django.conf import settings


@dataclass(frozen=True)
class ObjectLimit:
    """The two limits of a free-form object field: how many keys, how many bytes."""

    keys_setting: str
    bytes_setting: str

    @property
    def max_keys(self) -> int:
        return int(getattr(settings, self.keys_setting))

    @property
    def max_bytes(self) -> int:
        return int(getattr(settings, self.bytes_setting))


CONTACT_PROPERTIES = ObjectLimit("CONTACT_PROPERTIES_MAX_KEYS", "CONTACT_PROPERTIES_MAX_BYTES")
EVENT_PROPERTIES = ObjectLimit("EVENT_PROPERTIES_MAX_KEYS", "EVENT_PROPERTIES_MAX_BYTES")
TRANSACTIONAL_DATA = ObjectLimit("TRANSACTIONAL_DATA_MAX_KEYS", "TRANSACTIONAL_DATA_MAX_BYTES")


class LimitExceeded(ValueError):
    """`field` is over `limit` (`unit`: keys, bytes or rows); `setting` is the setting that tunes it."""

    def __init__(self, *, field: str, limit: int, actual: int, unit: str, setting: str) -> None:
        self.field, self.limit, self.actual, self.unit, self.setting = field, limit, actual, unit, setting
        super().__init__(self.describe())

    def describe(self) -> str:
        if self.unit == "bytes":
            return f"{self.field} is too large: {self.actual} bytes (at most {self.limit} bytes)"
        return f"{self.field} has too many {self.unit}: {self.actual} (at most {self.limit})"


def json_size(value: Any) -> int:
    """Bytes of `value` as compact UTF-8 JSON (lone surrogates counted, not refused: that is another check's)."""
    try:
        text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)
    except (RecursionError, ValueError):
        return 0  # nesting too deep to serialize: the field's own validation refuses it, naming the path
    return len(text.encode("utf-8", "surrogatepass"))


def check_object(value: Any, *, field: str, limit: ObjectLimit) -> None:
    """Raise LimitExceeded when the object `value` has more keys or bytes than `limit` allows."""
    if not isinstance(value, dict):
        return
    if len(value) > limit.max_keys:
        raise LimitExceeded(
            field=field, limit=limit.max_keys, actual=len(value), unit="keys", setting=limit.keys_setting
        )
    size = json_size(value)
    if size > limit.max_bytes:
        raise LimitExceeded(
            field=field, limit=limit.max_bytes, actual=size, unit="bytes", setting=limit.bytes_setting
        )


def check_bytes(size: int, *, field: str, setting: str) -> None:
    """Raise LimitExceeded when `size` is over the byte limit named by `setting`."""
    limit = int(getattr(settings, setting))
    if size > limit:
        raise LimitExceeded(field=field, limit=limit, actual=size, unit="bytes", setting=setting)


def check_count(count: int, *, field: str, unit: str, setting: str) -> None:
    """Raise LimitExceeded when `count` is over the limit named by `setting`."""
    limit = int(getattr(settings, setting))
    if count > limit:
        raise LimitExceeded(field=field, limit=limit, actual=count, unit=unit, setting=setting)
