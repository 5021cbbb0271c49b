"""DOM-02 roles and permission scopes; every check goes through `has_permission`."""

from __future__ import annotations

from owlat.models import Role

_ALL = frozenset({Role.OWNER, Role.ADMIN, Role.EDITOR})
_ADMINS = frozenset({Role.OWNER, Role.ADMIN})
_OWNER = frozenset({Role.OWNER})

PERMISSIONS: dict[str, frozenset[str]] = {
    **dict.fromkeys(("campaigns:send", "campaigns:manage", "campaigns:schedule", "contacts:annotate"), _ALL),
    **dict.fromkeys(
        (
            "automations:manage",
            "templates:manage",
            "topics:manage",
            "segments:manage",
            "media:manage",
            "imports:manage",
            "contacts:manage",
            "organization:manage",
            "settings:manage",
            "shareLinks:manage",
            "chat:manage",
        ),
        _ADMINS,
    ),
    "organization:delete": _OWNER,
    **dict.fromkeys(("emails:test", "knowledge:read", "chat:participate"), _ALL),
}


def has_permission(role: str | None, perm: str) -> bool:
    if role is None:
        return False
    allowed = PERMISSIONS.get(perm)
    if allowed is None:
        raise KeyError(f"unknown permission {perm!r}")
    return role in allowed
