"""Handing send rows to the dispatch pools (D-06, DLV-09): pool per kind, enqueue, lookup and the operator's
re-send of outcome-unknown rows (D-07)."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any

from django.db import transaction

from delivery.lifecycle import SendRef, model_for

BATCH_SIZE = 100  # D-06: one job dispatches up to 100 rows of its pool over one connection
POOL_FOR_KIND = {"campaign": "campaign", "transactional": "transactional"}
ROW_SCAN_CAP = 10_000  # DLV-09


def pool_for(ref_kind: str) -> str:
    return POOL_FOR_KIND[ref_kind]


def sends_enqueue(
    ref_kind: str, send_ids: Sequence[Any], *, at: Any = None, chunk_size: int = BATCH_SIZE
) -> int:
    """Hand rows to their pool in jobs of up to `chunk_size` (at most `BATCH_SIZE`) ids, inside the caller's
    transaction, all jobs in one write (`owlat.jobs.enqueue_many`)."""
    from owlat.jobs import enqueue_many

    ids = [str(i) for i in send_ids]
    size = max(1, min(chunk_size, BATCH_SIZE))
    chunks = [(ref_kind, ids[start : start + size]) for start in range(0, len(ids), size)]
    enqueue_many("delivery.tasks.send_batch_task", chunks, at=at, queue=pool_for(ref_kind))
    return len(chunks)


def send_lookup(ref: SendRef, *, organization_id: Any = None) -> Any:
    model = model_for(ref.kind)
    qs = model.objects.filter(pk=uuid_or_none(ref.id))
    if organization_id is not None:
        qs = qs.filter(organization_id=organization_id)
    return qs.first()


def sends_resend_unknown(ref_kind: str, send_ids: Sequence[Any]) -> int:
    """D-07 explicit operator re-send: clear the hand-off of outcome-unknown rows and hand them to their pool.
    The recipient may get the message twice; that is the operator's decision."""
    from delivery.lifecycle import reset_for_resend

    with transaction.atomic():
        reset = [str(pk) for pk in send_ids if reset_for_resend(ref_kind, str(pk))]
        if reset:
            sends_enqueue(ref_kind, reset)
    return len(reset)


def uuid_or_none(value: Any) -> uuid.UUID | None:
    try:
        return uuid.UUID(str(value))
    except (TypeError, ValueError, AttributeError):
        return None
