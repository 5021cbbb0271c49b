"""Operator functions behind the management commands (tested directly; `handle()` only parses arguments)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from campaigns import review, services
from campaigns.lifecycle import LEGAL_EDGES
from campaigns.models import STATS_FIELDS, Campaign
from owlat.lifecycle import Outcome
from owlat.permissions import Authority

VERBS = ("send", "unschedule", "cancel", "pause", "resume", "approve", "reject", "declare-winner")


@dataclass
class TransitionPlan:
    ok: bool
    message: str
    outcome: Outcome | None = None


def campaign_transition_run(
    *, campaign_id: Any, verb: str, actor: str, dry_run: bool = False, reason: str = "", winner: str = ""
) -> TransitionPlan:
    """`campaign_transition`: one operator transition through the same wrappers as the admin and API."""
    from campaigns import abtest

    campaign = Campaign.objects.filter(pk=campaign_id).first()
    if campaign is None:
        return TransitionPlan(False, "Campaign not found")
    target = {
        "send": "sending",
        "unschedule": "draft",
        "cancel": "cancelled",
        "pause": "paused",
        "resume": "sending",
        "approve": "sending",
        "reject": "draft",
    }
    if dry_run:
        if verb == "declare-winner":
            ok = campaign.is_ab_test and campaign.ab_test_status == "testing"
            return TransitionPlan(
                ok, f"would declare {winner or '?'} the winner" if ok else "not in A/B testing"
            )
        to = target[verb]
        legal = (campaign.status, to) in LEGAL_EDGES or campaign.status == to
        verdict = "would move" if legal else "would be refused:"
        return TransitionPlan(legal, f"{verdict} {campaign.status} → {to} (actor {actor})")
    if verb == "approve":
        outcome = review.review_approve(campaign_id=campaign.pk, actor=actor, authority=Authority.operator())
    elif verb == "reject":
        outcome = review.review_reject(
            campaign_id=campaign.pk, actor=actor, reason=reason, authority=Authority.operator()
        )
    elif verb == "declare-winner":
        outcome = abtest.ab_declare_winner(
            campaign_id=campaign.pk, winner=winner, actor=actor, authority=Authority.operator()
        )
    else:
        outcome = services.ACTIONS[verb](
            campaign_id=campaign.pk,
            organization_id=campaign.organization_id,
            actor=actor,
            authority=Authority.operator(),
        )
    if outcome.ok:
        return TransitionPlan(True, f"{outcome.applied}: {outcome.from_state} → {outcome.to_state}", outcome)
    return TransitionPlan(False, outcome.message or outcome.reason or "refused", outcome)


@dataclass
class BackfillReport:
    campaigns: int = 0
    changed: int = 0
    last_id: str | None = None
    differences: list[str] = field(default_factory=list)


def _row_counts(campaign_id: Any) -> dict[str, int]:
    """DLV-09 buckets from every row (no scan cap; delivery's one definition), in the campaign's `stats_*`
    names."""
    from delivery.models import EmailSend
    from delivery.services import send_buckets

    buckets = send_buckets(EmailSend.objects.filter(campaign_id=campaign_id, deleted_at__isnull=True))
    return {field: buckets[field.removeprefix("stats_")] for field in STATS_FIELDS}


def campaign_stats_backfill(
    *,
    apply: bool,
    batch_size: int = 100,
    after: str | None = None,
    progress: Callable[[int], None] | None = None,
) -> BackfillReport:
    """Recompute every campaign's `stats_*` from its send rows, in pk batches (resumable with `after`).
    A dry run unless `apply`."""
    from django.utils import timezone

    report = BackfillReport()
    qs = Campaign.objects.order_by("pk")
    if after:
        qs = qs.filter(pk__gt=after)
    while True:
        batch = list((qs.filter(pk__gt=report.last_id) if report.last_id else qs)[:batch_size])
        if not batch:
            break
        for campaign in batch:
            counts = _row_counts(campaign.pk)
            stored = {f: getattr(campaign, f) for f in STATS_FIELDS}
            if counts != stored:
                report.changed += 1
                diff = ", ".join(f"{k} {stored[k]}→{v}" for k, v in counts.items() if stored[k] != v)
                report.differences.append(f"{campaign.pk} {campaign.name}: {diff}")
                if apply:
                    Campaign.objects.filter(pk=campaign.pk).update(**counts, stats_updated_at=timezone.now())
            report.campaigns += 1
            report.last_id = str(campaign.pk)
            if progress:
                progress(1)
    return report
