"""DOM-03 API keys: `lm_live_` + 32 random alphanumerics, stored as a SHA-256 hash, shown once."""

from __future__ import annotations

import hashlib
import re
import secrets
import string
import threading
from typing import Any

from django.db import connection
from django.db.models import Q
from django.utils import timezone

from owlat.models import ApiKey
from owlat.sql import api_key_row, api_key_row_and_take

KEY_PREFIX = "lm_live_"
KEY_RANDOM_LENGTH = 32
KEY_FORMAT = re.compile(r"^lm_live_[A-Za-z0-9]+$")
MIN_KEY_LENGTH = 40

# DOM-03 standalone scopes plus the API-03 [project] extensions.
SCOPES: tuple[str, ...] = (
    "contacts:read",
    "contacts:write",
    "events:write",
    "transactional:send",
    "topics:write",
    "transactional:read",
    "topics:read",
    "topics:manage",
    "segments:read",
    "segments:write",
    "templates:read",
    "templates:write",
    "automations:read",
    "automations:write",
    "campaigns:read",
    "campaigns:write",
    "campaigns:send",
    "inbox:read",
    "inbox:write",
    "inbox:review",
    "inbox:manage",
)
SDK_SCOPES: tuple[str, ...] = (
    "contacts:read",
    "contacts:write",
    "events:write",
    "transactional:send",
    "topics:write",
)

_ALPHABET = string.ascii_letters + string.digits


class InvalidScopes(ValueError):
    pass


def hash_key(raw: str) -> str:
    return hashlib.sha256(raw.encode()).hexdigest()


def validate_scopes(scopes: Any) -> list[str]:
    if not isinstance(scopes, list | tuple) or not scopes:
        raise InvalidScopes("At least one scope is required")
    unknown = [s for s in scopes if s not in SCOPES]
    if unknown:
        raise InvalidScopes(
            f"Unknown scope(s): {', '.join(map(str, unknown))}. Valid scopes: {', '.join(SCOPES)}"
        )
    return list(dict.fromkeys(scopes))


def api_key_create(
    *, organization_id: Any, name: str, scopes: list[str], expires_at: Any = None
) -> tuple[ApiKey, str]:
    """Create a key; returns the row and the raw key (the only time it exists in clear)."""
    scopes = validate_scopes(scopes)
    raw = KEY_PREFIX + "".join(secrets.choice(_ALPHABET) for _ in range(KEY_RANDOM_LENGTH))
    key = ApiKey.objects.create(
        organization_id=organization_id,
        name=name,
        scopes=scopes,
        expires_at=expires_at,
        key_hash=hash_key(raw),
        key_prefix=raw[:16],
    )
    return key, raw


def api_key_authenticate(raw: str) -> ApiKey | None:
    """The active, unexpired, unrevoked key for `raw`, or None."""
    now = timezone.now()
    if connection.vendor == "postgresql":
        return _authenticate_sql(hash_key(raw), now)
    return (
        ApiKey.objects.select_related("organization")
        .filter(key_hash=hash_key(raw), is_active=True, revoked_at__isnull=True)
        .filter(Q(expires_at__isnull=True) | Q(expires_at__gt=now))
        .first()
    )


_built = threading.local()
_BUILT_MAX = 1024


def _key_from_row(row: Any) -> ApiKey:
    """The key's columns (in `concrete_fields` order) made an `ApiKey` as the ORM would — or the instance this
    thread already made from exactly these column values (building it was ~0.06 ms of every API
    request). Every request still reads the row; any change to it (scopes, revocation, expiry, last use)
    gives a new instance."""
    row = tuple(row)
    built = getattr(_built, "keys", None)
    if built is None:
        built = _built.keys = {}
    try:
        key = built.get(row)
    except TypeError:  # an unhashable column value (not with psycopg's text jsonb): build it
        return _build_key(row)
    if key is None:
        if len(built) >= _BUILT_MAX:
            built.clear()
        key = built[row] = _build_key(row)
    return key


def _build_key(row: Any) -> ApiKey:
    fields = ApiKey._meta.concrete_fields
    values = [
        field.from_db_value(value, None, connection) if hasattr(field, "from_db_value") else value
        for field, value in zip(fields, row, strict=True)
    ]
    return ApiKey.from_db(connection.alias, [f.attname for f in fields], values)


def _authenticate_sql(key_hash: str, now: Any) -> ApiKey | None:
    """`api_key_authenticate`'s lookup as one written-out statement (`owlat.sql.api_key_row`), the row made an
    `ApiKey` as the ORM would. The organization is not joined: it loads on first access, which no API path
    does."""
    row = api_key_row(key_hash, now)
    return None if row is None else _key_from_row(row)


def api_key_authenticate_and_take(
    raw: str, *, bucket_prefix: str, rate: float, capacity: float, now: float, cost: float = 1.0
) -> tuple[ApiKey | None, tuple[float, float] | None]:
    """`api_key_authenticate` and a take from the key's token bucket (`bucket_prefix` + its id;
    `owlat.ratelimit`'s refill-and-take) in one statement on PostgreSQL (one round trip less per API
    request). Returns the key (None: no usable key, nothing taken) and (tokens before the take, tokens after),
    which is None when the key's bucket row does not exist yet (the caller takes through `owlat.ratelimit`)."""
    params = {
        "hash": hash_key(raw),
        "now": timezone.now(),
        "prefix": bucket_prefix,
        "capacity": capacity,
        "epoch": now,
        "rate": rate,
        "cost": cost,
    }
    row = api_key_row_and_take(params)
    if row is None:
        return None, None
    *key_row, before, after = row
    take = None if before is None else (float(before), float(after))
    return _key_from_row(key_row), take


def api_key_revoke(*, api_key_id: Any, organization_id: Any) -> bool:
    return bool(
        ApiKey.objects.filter(pk=api_key_id, organization_id=organization_id, revoked_at__isnull=True).update(
            is_active=False, revoked_at=timezone.now()
        )
    )
