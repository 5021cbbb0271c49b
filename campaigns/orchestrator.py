"""The send orchestrator `start_campaign_send` (CMP-22 … CMP-28) and the winner-to-remainder phase (CMP-33).

Exactly one pipeline run per → `sending` (CMP-23): a run that finds the campaign `scheduled` only moves it to
`sending` (actor `system:scheduler_tick`) and stops; the run enqueued by that transition's effect does the rest.
The scan (pure, plus an optional Safe Browsing lookup) runs outside any transaction; its outcome, the archive
snapshot, the audience freeze and the send-job checkpoint are then written in one transaction under the
campaign's row lock, which is also where a duplicated run finds the job and skips ("Already running").
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import logging
from typing import Any

from django.db import transaction
from django.utils import timezone

from campaigns.ab_lifecycle import PENDING, TESTING, WINNER_SELECTED, AbLifecycle
from campaigns.abtest import cohort_fraction
from campaigns.lifecycle import (
    ACTOR_CONTENT_SCAN,
    ACTOR_ORCHESTRATOR,
    ACTOR_SCHEDULER,
    CANCELLED,
    DRAFT,
    PENDING_REVIEW,
    SCHEDULED,
    SENDING,
    SENT,
    campaign_transition,
    campaign_transition_locked,
)
from campaigns.models import Campaign, CampaignSendJob, ContentScanResult, SendJobPhase, VariantMode
from campaigns.preflight import validate_ready_to_send
from campaigns.queues import control_queue
from campaigns.walker import new_hop_token

logger = logging.getLogger(__name__)

PAGE_TASK = "campaigns.tasks.campaign_resolve_page_task"


class OrchestratorError(Exception):
    pass


def effective_subject(campaign: Campaign, template: Any) -> str:
    return campaign.subject or template.subject or ""


def scan_input(campaign: Campaign, template: Any) -> tuple[str, str]:
    """The effective subject and the rendered HTML (default language, no personal data)."""
    from templates.rendering import prepare_template, render_prepared

    rendered = render_prepared(
        prepare_template(template, None), {}, subject_override=campaign.subject or None
    )
    return effective_subject(campaign, template), rendered.html


def campaign_scan(campaign: Campaign, template: Any) -> tuple[Any, str, list[Any]]:
    """CMP-25 over the whole content snapshot (every variant, every language): the worst entry's result with
    every entry's flags (named by variant and language when there is more than one), one Safe Browsing lookup
    over all their links; the CMP-12 fingerprint of the snapshot; and the snapshot's entries."""
    from campaigns.scanner import ScanResult, extract_links, level_for, safe_browsing_flags, scan_content
    from campaigns.snapshot import entries_fingerprint, entry_rendered, snapshot_build

    entries = snapshot_build(campaign)
    flags: list[Any] = []
    links: list[Any] = []
    worst = 0
    for entry in entries:
        subject, html = entry_rendered(entry)
        links.extend(extract_links(html))
        result = scan_content(subject, html)
        worst = max(worst, result.score)
        if len(entries) > 1:
            label = f"Variant {entry.variant} ({entry.sources.language}): "
            flags.extend(dataclasses.replace(f, description=label + f.description) for f in result.flags)
        else:
            flags.extend(result.flags)
    url_flags = safe_browsing_flags(list({link.href: link for link in links}.values()))
    url_only = scan_content("", "", rules=(), url_flags=url_flags)
    score = min(100, worst + url_only.score)
    scan = ScanResult(score=score, level=level_for(score), flags=flags + url_only.flags)
    return scan, entries_fingerprint(entries), entries


def send_job_open(
    campaign: Campaign,
    *,
    variant_mode: str,
    audience: dict[str, Any],
    test_fraction: float | None = None,
    split_percentage: int | None = None,
    winning_variant: str | None = None,
    at: dt.datetime,
) -> CampaignSendJob:
    """CMP-03: create the job, or reset the campaign's existing one (one upsert on the campaign's unique job
    row, no read and no savepoints); enqueue the first page hop."""
    from owlat.jobs import enqueue

    token = new_hop_token()  # the first hop owns the walk (a redelivered one resumes from the checkpoint)
    fields: dict[str, Any] = {
        "organization_id": campaign.organization_id,
        "phase": SendJobPhase.RESOLVING,
        "variant_mode": variant_mode,
        "test_fraction": test_fraction,
        "split_percentage": split_percentage,
        "winning_variant": winning_variant,
        "cursor": "",
        "hop_token": token,
        "audience": audience,
        "enqueued_count": 0,
        "total_candidates": 0,
        "pages": 0,
        "started_at": at,
        "updated_at": at,
        "finished_at": None,
    }
    job = CampaignSendJob(campaign=campaign, **fields)
    CampaignSendJob.objects.bulk_create(
        [job], update_conflicts=True, unique_fields=["campaign"], update_fields=list(fields)
    )
    enqueue(PAGE_TASK, str(campaign.pk), "", token, queue=control_queue())
    return job


def start_campaign_send(campaign_id: Any, *, now: dt.datetime | None = None) -> str:
    """CMP-22 … CMP-29. Returns a short summary ("skipped: …" for the guards)."""
    now = now or timezone.now()
    campaign = Campaign.objects.filter(pk=campaign_id).select_related("email_template").first()
    if campaign is None:
        raise OrchestratorError(f"Campaign {campaign_id} not found")
    skip = _guard(campaign, now)
    if skip:
        return skip
    template = campaign.email_template
    # CMP-23: a scheduled campaign is only moved to sending; that transition enqueues the run that sends.
    if campaign.status == SCHEDULED:
        outcome = campaign_transition(campaign_id=campaign.pk, to=SENDING, actor=ACTOR_SCHEDULER, at=now)
        return f"moved to sending ({outcome.applied or outcome.reason})"
    # CMP-25 (outside any transaction: the Safe Browsing lookup is HTTP)
    scan, fingerprint, entries = campaign_scan(campaign, template)
    with transaction.atomic():
        locked = Campaign.objects.select_for_update().get(pk=campaign.pk)
        if locked.status != SENDING:
            return f"skipped: campaign is {locked.status}"
        if _already_running(locked):
            return "skipped: Already running"
        held = _hold_for_content(locked, scan, fingerprint, now)
        if held:
            return held
        _freeze(locked, entries, now)
        _open_send_job(locked, now)
    return "send job opened"


def _guard(campaign: Campaign, now: dt.datetime) -> str:
    """CMP-22 / CMP-24: why this run does not send ("skipped: …"), or "" when it goes on."""
    skip = {
        CANCELLED: "Campaign was cancelled",
        DRAFT: "Campaign was unscheduled",
        SENT: "Campaign was already sent",
        PENDING_REVIEW: "Campaign is held for review",
    }.get(campaign.status)
    if skip:
        return f"skipped: {skip}"
    if campaign.status == SCHEDULED and campaign.scheduled_at and campaign.scheduled_at > now:
        return "skipped: Not yet due (rescheduled)"
    if campaign.status == SENDING and _already_running(campaign):
        return "skipped: Already running"
    preflight = validate_ready_to_send(campaign, now=now, check_capacity=False)
    if not preflight.ready:
        return f"skipped: Pre-flight failed: {preflight.message}"
    template = campaign.email_template
    if not (template.html_content or "").strip():
        raise OrchestratorError(f"Template {template.pk} of campaign {campaign.pk} has no rendered HTML")
    return ""


def _hold_for_content(locked: Campaign, scan: Any, fingerprint: str, now: dt.datetime) -> str:
    """CMP-25 / CMP-26: record a scan that is not clean; a blocked one sends the campaign back to draft, a
    suspicious one to review (unless this content was approved). Returns the summary when held, else ""."""
    approved = fingerprint == locked.approved_content_fingerprint
    level = "clean" if approved else scan.level
    if scan.level != "clean":
        ContentScanResult.objects.create(
            organization_id=locked.organization_id,
            campaign=locked,
            score=scan.score,
            level=scan.level,
            flags=scan.flag_dicts(),
            fingerprint=fingerprint,
            scanned_at=now,
        )
    if level == "blocked":
        reason = "Content blocked: " + "; ".join(f.description for f in scan.flags)
        campaign_transition_locked(
            locked, DRAFT, actor=ACTOR_CONTENT_SCAN, input={"content_block_reason": reason}, at=now
        )
        return f"skipped: Content blocked by scanner (score: {scan.score}/100)"
    if level == "suspicious":
        campaign_transition_locked(locked, PENDING_REVIEW, actor=ACTOR_CONTENT_SCAN, at=now)
        return f"skipped: Content flagged for review (score: {scan.score}/100)"
    return ""


def _freeze(locked: Campaign, entries: Any, now: dt.datetime) -> None:
    """CMP-27 archive snapshot, CMP-28 freeze: what was scanned is what is sent, to the audience of now."""
    from campaigns.archive import archive_snapshot_fields
    from campaigns.audience import audience_frozen
    from campaigns.snapshot import snapshot_forget, snapshot_store

    snapshot_store(locked, entries)
    transaction.on_commit(lambda: snapshot_forget(locked.pk))
    updates: dict[str, Any] = archive_snapshot_fields(locked, entries)
    frozen = audience_frozen(locked, at=now)
    if frozen is not None:
        updates["audience"] = frozen
    if updates:
        Campaign.objects.filter(pk=locked.pk).update(**updates)
        for key, value in updates.items():
            setattr(locked, key, value)


def _open_send_job(locked: Campaign, now: dt.datetime) -> None:
    """CMP-29: open the checkpoint and schedule the first page; an A/B test's window starts now, with the first
    test-cohort page, after the scan and any review."""
    cfg = locked.ab_config()
    if locked.is_ab_test and cfg and locked.ab_test_status in (PENDING, TESTING):
        AbLifecycle().transition_locked(locked, TESTING, actor=ACTOR_ORCHESTRATOR, at=now)
        split = cfg.get("splitPercentage") or 0
        send_job_open(
            locked,
            variant_mode=VariantMode.AB_TEST,
            audience=locked.audience,
            test_fraction=cohort_fraction(split),
            split_percentage=split,
            at=now,
        )
    else:
        send_job_open(locked, variant_mode=VariantMode.PLAIN, audience=locked.audience, at=now)


def _already_running(campaign: Campaign) -> bool:
    """CMP-23: a send job started at or after this send's `sent_at`."""
    job = CampaignSendJob.objects.filter(campaign_id=campaign.pk).values("started_at").first()
    return bool(job and campaign.sent_at and job["started_at"] >= campaign.sent_at)


def send_winner_to_remainder(campaign_id: Any, *, now: dt.datetime | None = None) -> str:
    """CMP-33 as the issue tracker refined it: once the test-cohort walk is done, walk the frozen audience again
    for every contact without a send row of this campaign (the held-back remainder, and anyone the test walk did
    not reach), with the winner's content. Acts only while the campaign is `sending` and its A/B test has a
    winner; a winner declared while the test cohort is still walked takes effect when that walk ends (the walk's
    last page runs this again). Idempotent: a second run for the same winner finds the `ab_winner` job."""
    from campaigns.audience import audience_frozen
    from campaigns.sender import campaign_sender

    now = now or timezone.now()
    with transaction.atomic():
        campaign = Campaign.objects.select_for_update().filter(pk=campaign_id).first()
        if campaign is None:
            return "skipped: campaign not found"
        cfg = campaign.ab_config()
        if campaign.status != SENDING:
            return f"skipped: campaign is {campaign.status}"
        if not campaign.is_ab_test or not campaign.ab_winner or campaign.ab_test_status != WINNER_SELECTED:
            return "skipped: no A/B winner"
        if not (campaign.email_template_id and campaign_sender(campaign).email and campaign.audience and cfg):
            return "skipped: campaign incomplete"
        job = CampaignSendJob.objects.select_for_update().filter(campaign=campaign).first()
        if job is None or job.variant_mode == VariantMode.PLAIN:
            return "skipped: no test-cohort walk"
        if job.variant_mode == VariantMode.AB_TEST and job.phase == SendJobPhase.RESOLVING:
            return "deferred: the test cohort is still being walked"
        if job.variant_mode == VariantMode.AB_WINNER and job.started_at >= (
            campaign.ab_winner_selected_at or now
        ):
            return "skipped: remainder already running"
        frozen = audience_frozen(campaign, at=now)
        if frozen is not None:
            Campaign.objects.filter(pk=campaign.pk).update(audience=frozen)
            campaign.audience = frozen
        split = cfg.get("splitPercentage") or 0
        send_job_open(
            campaign,
            variant_mode=VariantMode.AB_WINNER,
            audience=campaign.audience,
            test_fraction=job.test_fraction
            if job and job.test_fraction is not None
            else cohort_fraction(split),
            split_percentage=split,
            winning_variant=campaign.ab_winner,
            at=now,
        )
    return f"remainder walk opened (winner {campaign.ab_winner})"
