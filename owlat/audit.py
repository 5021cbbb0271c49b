"""DOM-15 audit log: one explicit writer, called inside the transaction of the change it describes."""

from __future__ import annotations

import json
from typing import Any

from django.utils import timezone

from owlat.models import AuditLog

AUDIT_RETENTION_DAYS = 30


def _flat(details: dict[str, Any]) -> tuple[dict[str, Any], str | None]:
    flat: dict[str, Any] = {}
    nested: dict[str, Any] = {}
    for key, value in details.items():
        if value is None or isinstance(value, str | int | float | bool):
            flat[key] = value
        else:
            nested[key] = value
    return flat, (json.dumps(nested, default=str, sort_keys=True) if nested else None)


def audit_write(
    *,
    organization_id: Any,
    actor: str,
    action: str,
    resource: str,
    resource_id: str | None = None,
    details: dict[str, Any] | None = None,
    ip_address: str | None = None,
    user_agent: str | None = None,
) -> AuditLog:
    entry = audit_entry(
        organization_id=organization_id,
        actor=actor,
        action=action,
        resource=resource,
        resource_id=resource_id,
        details=details,
        ip_address=ip_address,
        user_agent=user_agent,
    )
    entry.save(force_insert=True)
    return entry


def audit_entry(
    *,
    organization_id: Any,
    actor: str,
    action: str,
    resource: str,
    resource_id: str | None = None,
    details: dict[str, Any] | None = None,
    ip_address: str | None = None,
    user_agent: str | None = None,
) -> AuditLog:
    """An unsaved audit row, for writers that insert many at once (`bulk_create`)."""
    flat, blob = _flat(details or {})
    return AuditLog(
        organization_id=organization_id,
        user_id=str(actor),
        action=action,
        resource=resource,
        resource_id=resource_id,
        details=flat,
        details_blob=blob,
        ip_address=ip_address,
        user_agent=user_agent,
    )


def audit_purge_task() -> str:
    """Daily retention sweep (DOM-15)."""
    cutoff = timezone.now() - timezone.timedelta(days=AUDIT_RETENTION_DAYS)
    deleted, _ = AuditLog.objects.filter(created_at__lt=cutoff).delete()
    return f"purged {deleted} audit rows"
