"""The stuck-send reaper (D-07 recovery), run every minute as the `delivery.reap_stuck_sends` sweep and by the
`reap_stuck_sends` command.

A row no live pool job holds is either never on the wire (handed to its pool again, once per re-drive lease) or
handed off without a recorded result (flagged outcome-unknown, never re-sent automatically); an outcome-unknown
row older than 24 hours becomes `failed`. A paused or cancelled campaign's rows stay where they are.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field

from django.db import transaction
from django.utils import timezone

from delivery.lifecycle import (
    UNKNOWN_OUTCOME_DEADLINE,
    SendRef,
    campaigns_on_hold,
    claim_lease,
    claim_orphans,
    lease_orphans,
    mark_outcome_unknown,
    model_for,
    send_transition,
)
from delivery.models import SendStatus
from delivery.providers import AMBIGUOUS_TIMEOUT

UNCONFIRMED_CODE = "PROVIDER_ACCEPTANCE_UNCONFIRMED"
KINDS = ("campaign", "transactional")


@dataclass
class ReapReport:
    orphans: dict[str, list[str]] = field(default_factory=dict)
    lost_hand_offs: dict[str, list[str]] = field(default_factory=dict)
    expired_unknown: dict[str, list[str]] = field(default_factory=dict)

    def counts(self) -> dict[str, int]:
        return {
            "orphans": sum(len(v) for v in self.orphans.values()),
            "lost_hand_offs": sum(len(v) for v in self.lost_hand_offs.values()),
            "expired_unknown": sum(len(v) for v in self.expired_unknown.values()),
        }


def reap_stuck_sends(*, apply: bool, now: dt.datetime | None = None, limit: int = 1000) -> ReapReport:
    """D-07 recovery:
    - queued rows no live job holds (never claimed for `orphan_after(kind)`, or claimed without hand-off under
      a claim nobody renewed for `SEND_CLAIM_LEASE_SECONDS`) are handed to their pool again (they were never
      on the wire), each once per `redrive_lease(kind)` (`lease_orphans`) while its queue consumes nothing;
    - rows handed off without a recorded result under such a dead claim are flagged outcome-unknown (never
      re-sent);
    - outcome-unknown rows older than 24 hours become `failed` `PROVIDER_ACCEPTANCE_UNCONFIRMED`.
    Dry run unless `apply`."""
    now = now or timezone.now()
    report = ReapReport()
    for kind in KINDS:
        report.orphans[kind] = _redrive_orphans(kind, apply=apply, now=now, limit=limit)
        lost = _lost_hand_offs(kind, now=now, limit=limit)
        expired = _expired_unknown(kind, now=now, limit=limit)
        report.lost_hand_offs[kind] = lost
        report.expired_unknown[kind] = expired
        if apply:
            _flag_unknown(kind, lost)
            _fail_unconfirmed(kind, expired, now=now)
    return report


def _redrive_orphans(kind: str, *, apply: bool, now: dt.datetime, limit: int) -> list[str]:
    """The orphans of `kind`; with `apply`, leased and handed to the pool in one transaction."""
    from delivery.services import sends_enqueue

    if not apply:
        return claim_orphans(kind, limit=limit, now=now)
    with transaction.atomic():
        orphans = lease_orphans(kind, limit=limit, now=now)
        if orphans and kind == "campaign":
            orphans = _not_on_hold(orphans)
        if orphans:
            sends_enqueue(kind, orphans)
    return orphans


def _not_on_hold(send_ids: list[str]) -> list[str]:
    """The campaign rows among `send_ids` whose campaign is not paused or cancelled: the sweep leaves a paused
    campaign's rows where they are (its resume hands them out)."""
    from delivery.models import EmailSend

    pairs = list(EmailSend.objects.filter(pk__in=send_ids).values_list("pk", "campaign_id"))
    held = campaigns_on_hold({str(c) for _, c in pairs})
    return [str(pk) for pk, c in pairs if str(c) not in held]


def _lost_hand_offs(kind: str, *, now: dt.datetime, limit: int) -> list[str]:
    """Queued rows handed off under a claim nobody renewed for the claim lease, not flagged yet."""
    rows = model_for(kind).objects.filter(
        status=SendStatus.QUEUED,
        handed_off_at__isnull=False,
        outcome_unknown=False,
        claimed_at__lt=now - claim_lease(),
    )
    return [str(pk) for pk in rows.values_list("pk", flat=True)[:limit]]


def _expired_unknown(kind: str, *, now: dt.datetime, limit: int) -> list[str]:
    """Outcome-unknown rows handed off more than `UNKNOWN_OUTCOME_DEADLINE` ago."""
    rows = model_for(kind).objects.filter(
        status=SendStatus.QUEUED,
        outcome_unknown=True,
        handed_off_at__lt=now - UNKNOWN_OUTCOME_DEADLINE,
    )
    return [str(pk) for pk in rows.values_list("pk", flat=True)[:limit]]


def _flag_unknown(kind: str, send_ids: list[str]) -> None:
    for pk in send_ids:
        mark_outcome_unknown(
            kind,
            pk,
            error_code=AMBIGUOUS_TIMEOUT,
            error_message="The worker stopped after hand-off; provider acceptance unknown",
        )


def _fail_unconfirmed(kind: str, send_ids: list[str], *, now: dt.datetime) -> None:
    for pk in send_ids:
        send_transition(
            SendRef(kind, pk),  # type: ignore[arg-type]
            SendStatus.FAILED,
            {
                "at": now,
                "error_code": UNCONFIRMED_CODE,
                "error_message": "The provider never confirmed acceptance within 24 hours",
            },
        )
