"""DOM-10 / DLV-12 / DLV-13: the suppression list, its upgrade rules and its scopes."""

from __future__ import annotations

from typing import Any

from django.db import IntegrityError, transaction

from owlat.contacts import normalize_email
from owlat.models import BlockedEmail, BlockReason

MARKETING_ONLY_REASONS = frozenset({BlockReason.UNENGAGED})
EVIDENCE_REASONS = frozenset({BlockReason.BOUNCED, BlockReason.COMPLAINED})


def is_suppressed(*, organization_id: Any, email: str | None, scope: str = "marketing") -> bool:
    """`marketing` blocks on every reason; `transactional` ignores marketing-only reasons (DLV-13)."""
    if not email:
        return False
    if scope not in ("marketing", "transactional"):
        raise ValueError(f"unknown suppression scope {scope!r}")
    qs = BlockedEmail.objects.filter(organization_id=organization_id, email=normalize_email(email))
    if scope == "transactional":
        qs = qs.exclude(reason__in=MARKETING_ONLY_REASONS)
    return qs.exists()


def _upgrade(
    row: BlockedEmail, reason: str, bounce_type: str | None, notes: str | None
) -> dict[str, Any] | None:
    """The fields to change on an existing row, or None when the new evidence does not upgrade it."""
    if row.reason in MARKETING_ONLY_REASONS and reason in EVIDENCE_REASONS:
        return {"reason": reason, "bounce_type": bounce_type, "notes": None}
    if (
        row.reason == BlockReason.BOUNCED
        and row.bounce_type == "soft"
        and reason == BlockReason.BOUNCED
        and bounce_type == "hard"
    ):
        return {"bounce_type": "hard"}
    if row.reason == BlockReason.BOUNCED and reason == BlockReason.COMPLAINED:
        return {"reason": reason}
    return None


def suppress(
    *,
    organization_id: Any,
    email: str,
    reason: str,
    bounce_type: str | None = None,
    notes: str | None = None,
    source_type: str | None = None,
    source_id: Any = None,
) -> BlockedEmail:
    """Insert or upgrade the suppression row for `email`; never duplicates (DLV-12)."""
    if reason not in BlockReason.values:
        raise ValueError(f"unknown suppression reason {reason!r}")
    address = normalize_email(email)
    with transaction.atomic():
        row = (
            BlockedEmail.objects.select_for_update()
            .filter(organization_id=organization_id, email=address)
            .first()
        )
        if row is None:
            try:
                with transaction.atomic():
                    return BlockedEmail.objects.create(
                        organization_id=organization_id,
                        email=address,
                        reason=reason,
                        bounce_type=bounce_type,
                        notes=notes,
                        source_type=source_type,
                        source_id=str(source_id) if source_id else None,
                    )
            except IntegrityError:
                row = BlockedEmail.objects.select_for_update().get(
                    organization_id=organization_id, email=address
                )
        changes = _upgrade(row, reason, bounce_type, notes)
        if changes:
            for key, value in changes.items():
                setattr(row, key, value)
            if source_type:
                row.source_type, row.source_id = source_type, str(source_id) if source_id else None
            row.save()
        return row


def unsuppress(*, organization_id: Any, email: str) -> bool:
    deleted, _ = BlockedEmail.objects.filter(
        organization_id=organization_id, email=normalize_email(email)
    ).delete()
    return bool(deleted)


def suppression_lift(*, organization_id: Any, email: str, actor: str, note: str = "") -> BlockedEmail | None:
    """An operator lifts a suppression (any reason): the row goes, the contact's soft-bounce count starts again,
    and an audit row (`suppression_lifted`, with what the row said) is written in the same transaction. Returns
    the lifted row, or None when the address was not suppressed."""
    from owlat.audit import audit_write
    from owlat.models import Contact

    address = normalize_email(email)
    with transaction.atomic():
        row = (
            BlockedEmail.objects.select_for_update()
            .filter(organization_id=organization_id, email=address)
            .first()
        )
        if row is None:
            return None
        audit_write(
            organization_id=organization_id,
            actor=actor,
            action="suppression_lifted",
            resource="blocked_email",
            resource_id=str(row.pk),
            details={
                "email": address,
                "reason": row.reason,
                "bounce_type": row.bounce_type,
                "notes": (row.notes or "")[:500],
                "source_type": row.source_type,
                "source_id": row.source_id,
                "note": note[:500],
            },
        )
        row.delete()
        Contact.objects.filter(
            organization_id=organization_id, email=address, soft_bounce_count__gt=0
        ).update(soft_bounce_count=0)
    return row
