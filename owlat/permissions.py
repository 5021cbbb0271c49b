"""DOM-02 roles and permission scopes; every check goes through `has_permission`."""

from __future__ import annotations

from dataclasses import dataclass

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
    "inbox:secret": _OWNER,  # see and rotate the raw inbound endpoint's secret
    **dict.fromkeys(("emails:test", "knowledge:read", "chat:participate"), _ALL),
}


def has_permission(role: str | None, perm: str) -> bool:
    if role is None:
        return False
    allowed = PERMISSIONS.get(perm)
    if allowed is None:
        raise KeyError(f"unknown permission {perm!r}")
    return role in allowed


@dataclass(frozen=True)
class Authority:
    """Who acts, handed to every lifecycle action that has role rules as a *required* argument — so a new caller
    cannot skip the permission check by leaving something out.

    Either an organization member's role (checked with `has_permission`; a member without a role is refused),
    or a caller whose right to act was established before the call, named explicitly: an API key whose scope the
    API checked, platform staff, an operator's management command, the system itself (a breaker, a test).
    """

    role: str | None = None
    granted_by: str = ""

    @classmethod
    def member(cls, role: str | None) -> Authority:
        return cls(role=role or None)

    @classmethod
    def api_key(cls, scope: str) -> Authority:
        return cls(granted_by=f"api key scope {scope}")

    @classmethod
    def platform_staff(cls) -> Authority:
        return cls(granted_by="platform staff")

    @classmethod
    def operator(cls) -> Authority:
        return cls(granted_by="operator command")

    @classmethod
    def system(cls, source: str) -> Authority:
        return cls(granted_by=f"system:{source}")

    def allows(self, perm: str) -> bool:
        if self.granted_by:
            return True
        return has_permission(self.role, perm)

    def is_platform(self) -> bool:
        """Platform staff, an operator's command or the system — never an organization member or an API key
        (DOM-02: platform staff operate the campaign review queue and abuse status)."""
        return self.granted_by in ("platform staff", "operator command") or self.granted_by.startswith(
            "system:"
        )


def authority_allows(authority: Authority, perm: str) -> bool:
    """The check a lifecycle action runs; anything but an `Authority` is a programming error (fails closed)."""
    if not isinstance(authority, Authority):
        raise TypeError(f"an owlat.permissions.Authority is required, got {type(authority).__name__}")
    return authority.allows(perm)


def platform_authority_allows(authority: Authority) -> bool:
    """The check of a platform-staff-only action; anything but an `Authority` is a programming error."""
    if not isinstance(authority, Authority):
        raise TypeError(f"an owlat.permissions.Authority is required, got {type(authority).__name__}")
    return authority.is_platform()
