"""Operator functions behind the management commands (tested; `handle()` only parses and prints)."""

from __future__ import annotations

from typing import Any

from django.db import transaction

from inbox import review
from inbox.models import InboundMessage
from inbox.models import ProcessingStatus as P
from inbox.queues import inbox_queue
from owlat.lifecycle import Outcome

VERBS = {
    "approve": review.message_approve,
    "reject": review.message_reject,
    "archive": review.message_archive,
    "release": review.message_release,
    "retry": review.message_retry,
    "undo": review.pending_send_cancel,
    "block-sender": review.message_block_sender,
}


def message_operator_transition(*, message_id: Any, verb: str, actor: str) -> Outcome:
    m = InboundMessage.objects.filter(pk=message_id).only("organization_id").first()
    if m is None:
        return Outcome(ok=False, reason="message_not_found", message="Message not found")
    return VERBS[verb](message_id=m.pk, organization_id=m.organization_id, actor=actor)


def message_reprocess(*, message_id: Any, actor: str) -> str:
    """Run the pipeline again: a `failed` message is retried (its failed action reset); a `received` message
    that was stored without a run (agent off, automated, over the start limit) is started. Other states refuse."""
    from owlat.jobs import enqueue

    m = InboundMessage.objects.filter(pk=message_id).first()
    if m is None:
        return "refused: Message not found"
    if m.processing_status == P.FAILED:
        out = review.message_retry(message_id=m.pk, organization_id=m.organization_id, actor=actor)
        return "restarted (retry)" if out.ok else f"refused: {out.message}"
    if m.processing_status == P.RECEIVED:
        with transaction.atomic():
            enqueue("inbox.tasks.message_start_task", str(m.pk), queue=inbox_queue())
        return "started"
    return f"refused: message is {m.processing_status}; only failed or received messages can be reprocessed"
