"""DOM-03 API keys: `lm_live_` + 32 random alphanumerics, stored as a SHA-256 hash, shown once."""

from __future__ import annotations

import hashlib
import re
import secrets
import string
from typing import Any

from django.db import connection
from django.db.models import Q
from django.utils import timezone

from owlat.models import ApiKey

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


_AUTH_SQL: str | None = None


def _authenticate_sql(key_hash: str, now: Any) -> ApiKey | None:
    """`api_key_authenticate`'s lookup as one written-out statement, the row made an `ApiKey` as the ORM would
    (issue 12: building and compiling the queryset was about a third of the events API's CPU; every API request
    runs it). The organization is not joined: it loads on first access, which no API path does."""
    global _AUTH_SQL
    fields = ApiKey._meta.concrete_fields
    if _AUTH_SQL is None:
        columns = ", ".join(connection.ops.quote_name(f.column) for f in fields)
        _AUTH_SQL = (
            f"SELECT {columns} FROM {ApiKey._meta.db_table} WHERE key_hash = %s AND is_active "
            "AND revoked_at IS NULL AND (expires_at IS NULL OR expires_at > %s) ORDER BY id LIMIT 1"
        )
    with connection.cursor() as cursor:
        cursor.execute(_AUTH_SQL, [key_hash, now])
        row = cursor.fetchone()
    if row is None:
        return None
    values = [
        field.from_db_value(value, None, connection) if hasattr(field, "from_db_value") else value
        for field, value in zip(fields, row, strict=True)
    ]
    return ApiKey.from_db(connection.alias, [f.attname for f in fields], values)


def api_key_revoke(*, api_key_id: Any, organization_id: Any) -> bool:
    return bool(
        ApiKey.objects.filter(pk=api_key_id, organization_id=organization_id, revoked_at__isnull=True).update(
            is_active=False, revoked_at=timezone.now()
        )
    )
