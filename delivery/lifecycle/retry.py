"""The operator's "retry failed" of a campaign: failed rows whose failure is retryable go back to `queued`.

Only rows that never reached a provider qualify — `failed` with a transient code (`RETRYABLE`: rate limited,
server error) and no `sent_at` — so a retry can never deliver a message twice. The rows are locked and
re-checked in one transaction (a concurrent retry waits, then finds them no longer failed and takes none), and
the claim that dispatch makes is a compare-and-set, so a row handed to the pool twice is still sent once.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from django.db import transaction
from django.db.models import QuerySet
from django.utils import timezone

from delivery.lifecycle.effects import _apply_counters
from delivery.models import EmailSend
from delivery.models import SendStatus as S
from delivery.providers.base import RETRYABLE


def campaign_failed_retryable(*, organization_id: Any, campaign_id: Any) -> QuerySet:
    """The campaign's rows a retry would re-queue (read-only; the confirmation page counts them)."""
    return EmailSend.objects.filter(
        organization_id=organization_id,
        campaign_id=campaign_id,
        status=S.FAILED,
        error_code__in=sorted(RETRYABLE),
        sent_at__isnull=True,
        deleted_at__isnull=True,
    )


def campaign_failed_requeue(
    *, organization_id: Any, campaign_id: Any, now: dt.datetime | None = None
) -> list[str]:
    """Put the retryable failed rows back to `queued` with a fresh attempt count, take them off the `failed`
    counter and hand them to the campaign pool. Returns the ids re-queued (none on a second call)."""
    from delivery.services import sends_enqueue

    with transaction.atomic():
        rows = campaign_failed_retryable(organization_id=organization_id, campaign_id=campaign_id)
        ids = [str(pk) for pk in rows.select_for_update().order_by("pk").values_list("pk", flat=True)]
        if not ids:
            return []
        updated = EmailSend.objects.filter(pk__in=ids, status=S.FAILED).update(
            status=S.QUEUED,
            queued_at=now or timezone.now(),
            failed_at=None,
            error_code=None,
            error_message=None,
            handed_off_at=None,
            claimed_at=None,
            claim_token=None,
            not_before=None,
            dispatch_attempts=0,
        )
        _apply_counters(str(organization_id), str(campaign_id), {"failed": -updated})
        sends_enqueue("campaign", ids)
    return ids
