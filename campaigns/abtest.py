"""A/B testing: configuration (CMP-15), the deterministic split (CMP-32), variant stats (CMP-20), the manual
(CMP-18) and automatic (CMP-19) winner, enable/disable on drafts."""

from __future__ import annotations

import datetime as dt
from typing import Any

from django.db import transaction
from django.utils import timezone

from campaigns.ab_lifecycle import TESTING, WINNER_SELECTED, AbLifecycle
from campaigns.authz import WINNER_FORBIDDEN, refusal
from campaigns.lifecycle import ACTOR_AUTO_WINNER, DRAFT, PAUSED, SENDING
from campaigns.models import Campaign
from campaigns.queues import control_queue
from owlat.lifecycle import Outcome
from owlat.permissions import Authority

SPLIT_MIN, SPLIT_MAX = 10, 50
PAUSED_RETRY = dt.timedelta(minutes=5)  # the auto-winner of a paused campaign asks again after this
DURATION_REQUIRED = "Test duration (hours, more than 0) is required unless the winner is chosen manually"


# --- CMP-32: deterministic split (pure) --------------------------------------------------------------------


def hash_fraction(campaign_id: Any, contact_id: Any) -> float:
    """FNV-1a 32-bit over the UTF-16 code units of `f"{campaign_id}:{contact_id}"`, scaled to [0, 1)."""
    key = f"{campaign_id}:{contact_id}"
    data = key.encode("utf-16-le", "surrogatepass")
    h = 0x811C9DC5
    for i in range(0, len(data), 2):
        h = ((h ^ (data[i] | (data[i + 1] << 8))) * 16777619) & 0xFFFFFFFF
    return h / 4294967296


def cohort_fraction(split_percentage: float) -> float:
    """The spec's `test_fraction(split)`."""
    return min(1.0, max(0.0, 2 * split_percentage / 100))


def variant_for_hash(h: float, tf: float) -> str | None:
    """`None` = the held-back remainder."""
    if tf <= 0 or h >= tf:
        return None
    return "A" if h < tf / 2 else "B"


# --- CMP-15: configuration ------------------------------------------------------------------------------------


class AbConfigError(ValueError):
    def __init__(self, message: str, field: str) -> None:
        super().__init__(message)
        self.message = message
        self.field = field


def ab_config_clean(organization_id: Any, raw: dict[str, Any]) -> dict[str, Any]:
    """Validate and normalize a CMP-15 config (keys in their spec spelling); raises `AbConfigError`."""
    from templates.models import EmailTemplate

    test_type = raw.get("testType")
    if test_type not in ("subject", "content"):
        raise AbConfigError("Test type must be subject or content", "testType")
    config: dict[str, Any] = {"testType": test_type}
    if test_type == "subject":
        subject = (raw.get("variantBSubject") or "").strip()
        if not subject:
            raise AbConfigError("Variant B subject is required for subject tests", "variantBSubject")
        config["variantBSubject"] = subject
    else:
        template_id = raw.get("variantBTemplateId")
        exists = False
        if template_id:
            try:
                exists = EmailTemplate.objects.filter(
                    pk=template_id, organization_id=organization_id
                ).exists()
            except (ValueError, TypeError, Exception):  # a malformed id is "missing"
                exists = False
        if not exists:
            raise AbConfigError("Variant B template is required for content tests", "variantBTemplateId")
        config["variantBTemplateId"] = str(template_id)
    split = raw.get("splitPercentage")
    if isinstance(split, bool) or not isinstance(split, int | float) or not SPLIT_MIN <= split <= SPLIT_MAX:
        raise AbConfigError("Split percentage must be between 10 and 50", "splitPercentage")
    config["splitPercentage"] = int(split) if float(split).is_integer() else split
    criteria = raw.get("winnerCriteria")
    if criteria not in ("open_rate", "click_rate", "manual"):
        raise AbConfigError("Winner criteria must be open_rate, click_rate or manual", "winnerCriteria")
    config["winnerCriteria"] = criteria
    if criteria != "manual":
        # without a window no automatic winner is ever declared and the remainder never mailed
        duration = raw.get("testDuration")
        if isinstance(duration, bool) or not isinstance(duration, int | float) or not duration > 0:
            raise AbConfigError(DURATION_REQUIRED, "testDuration")
        config["testDuration"] = duration
    return config


def _locked_draft(campaign: Campaign, authority: Authority) -> Campaign | Outcome:
    """The campaign locked for an A/B config change (call inside a transaction), or the refusal:
    `campaigns:manage` (CMP-11), then draft only."""
    refused = refusal(
        campaign.organization_id, authority, "campaigns:manage", "You are not allowed to change A/B tests"
    )
    if refused:
        return refused
    locked = Campaign.objects.select_for_update().get(pk=campaign.pk)
    if locked.status != DRAFT:
        return Outcome(
            ok=False, reason="not_draft", message="Cannot modify a campaign that is not in draft status"
        )
    return locked


def ab_enable(*, campaign: Campaign, config: dict[str, Any], actor: str, authority: Authority) -> Outcome:
    """Draft only; A/B lifecycle none → `pending` (a config change on an enabled test replaces the config).
    `campaigns:manage` (CMP-11)."""
    with transaction.atomic():
        locked = _locked_draft(campaign, authority)
        if isinstance(locked, Outcome):
            return locked
        lifecycle = AbLifecycle()
        if locked.ab_test_status is not None:
            lifecycle.transition_locked(locked, None, actor=actor)  # type: ignore[arg-type]
        return lifecycle.transition_locked(locked, "pending", actor=actor, input={"config": config})


def ab_disable(*, campaign: Campaign, actor: str, authority: Authority) -> Outcome:
    """Draft only; A/B lifecycle → none. `campaigns:manage` (CMP-11)."""
    with transaction.atomic():
        locked = _locked_draft(campaign, authority)
        if isinstance(locked, Outcome):
            return locked
        return AbLifecycle().transition_locked(locked, None, actor=actor)  # type: ignore[arg-type]


# --- CMP-20: variant stats -------------------------------------------------------------------------------------


def _rate(part: int, whole: int) -> float:
    return round(part / whole * 100, 2) if whole else 0.0


def variant_stats(campaign_id: Any, variant: str) -> dict[str, Any]:
    """CMP-20 from at most 10,000 of the variant's rows; `sent` = rows; buckets by delivery's one definition."""
    from delivery.models import EmailSend
    from delivery.services import open_rate_basis, send_buckets

    first = EmailSend.objects.filter(
        campaign_id=campaign_id, ab_variant=variant, deleted_at__isnull=True
    ).order_by("pk")
    buckets = send_buckets(EmailSend.objects.filter(pk__in=first.values("pk")[:10_000]))
    agg = {"sent": buckets["rows"], **{k: buckets[k] for k in ("delivered", "opened", "clicked")}}
    return {
        **agg,
        # opens are measured only on rows sent with the open pixel (0 when none was)
        "openRate": _rate(*(open_rate_basis(buckets) or (0, 0))[:2]),
        "clickRate": _rate(agg["clicked"], agg["delivered"]),
    }


def pick_winner(criteria: str | None, a: dict[str, Any], b: dict[str, Any]) -> str:
    """CMP-19: B only when strictly better; ties (and no data) pick A."""
    metric = "clickRate" if criteria == "click_rate" else "openRate"
    return "B" if b[metric] > a[metric] else "A"


# --- CMP-18 / CMP-19: declaring the winner ----------------------------------------------------------------------


def ab_declare_winner(
    *, campaign_id: Any, winner: str, actor: str, authority: Authority, organization_id: Any = None
) -> Outcome:
    """CMP-18 manual winner: `campaigns:manage`; `organization_id` scopes the lookup (None: operator/staff)."""
    refused = refusal(organization_id, authority, "campaigns:manage", WINNER_FORBIDDEN)
    if refused:
        return refused
    with transaction.atomic():
        qs = Campaign.objects.select_for_update().filter(pk=campaign_id)
        if organization_id is not None:
            qs = qs.filter(organization_id=organization_id)
        campaign = qs.first()
        if campaign is None:
            return Outcome(ok=False, reason="campaign_not_found", message="Campaign not found")
        if not campaign.is_ab_test:
            return Outcome(ok=False, reason="not_ab_test", message="Campaign is not an A/B test")
        if campaign.ab_test_status != TESTING:
            return Outcome(ok=False, reason="not_testing", message="A/B test is not in testing phase")
        if winner not in ("A", "B"):
            return Outcome(ok=False, reason="invalid_winner", message='Winner must be "A" or "B"')
        return AbLifecycle().transition_locked(
            campaign, WINNER_SELECTED, actor=actor, input={"winner": winner}
        )


def ab_auto_declare(campaign_id: Any) -> str:
    """CMP-19: acts only while the campaign is `sending` and its test still `testing` (idempotent); a run for
    a campaign sent, cancelled or sent back to draft in the meantime does nothing."""
    with transaction.atomic():
        campaign = Campaign.objects.select_for_update().filter(pk=campaign_id).first()
        if campaign is None or not campaign.is_ab_test or campaign.ab_test_status != TESTING:
            return "skipped: not testing"
        if campaign.status == PAUSED:  # decided once the send goes on: ask again in a few minutes
            from campaigns.ab_lifecycle import AUTO_WINNER_TASK
            from owlat.jobs import enqueue

            enqueue(
                AUTO_WINNER_TASK, str(campaign.pk), at=timezone.now() + PAUSED_RETRY, queue=control_queue()
            )
            return "deferred: campaign paused"
        if campaign.status != SENDING:
            return f"skipped: campaign is {campaign.status}"
        criteria = campaign.ab_config().get("winnerCriteria")
        winner = pick_winner(criteria, variant_stats(campaign.pk, "A"), variant_stats(campaign.pk, "B"))
        outcome = AbLifecycle().transition_locked(
            campaign, WINNER_SELECTED, actor=ACTOR_AUTO_WINNER, input={"winner": winner}
        )
    return f"winner {winner}" if outcome.ok else f"skipped: {outcome.reason}"
