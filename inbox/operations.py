"""Operator functions behind the management commands (tested; `handle()` only parses and prints)."""

from __future__ import annotations

from typing import Any

from inbox import review
from inbox.models import InboundMessage
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
    """Run the pipeline again through the retry service (`inbox.retry.message_restart`): a `failed` message is
    retried at the step that failed, a waiting `received` one started, a stuck one resumed. Others refuse."""
    from inbox.retry import message_restart

    outcome = message_restart(message_id=message_id, organization_id=None, actor=actor)
    if not outcome.ok:
        return f"refused: {outcome.message}"
    return {"started": "started", "resumed": "resumed (lost step enqueued)"}.get(
        outcome.reason or "", "restarted (retry)"
    )
