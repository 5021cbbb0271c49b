"""The checkpointed paged recipient walk (CMP-29 … CMP-36): several pages per task hop, one checkpoint per page.

A page, in one transaction under the send job's row lock: read one page after the cursor, apply eligibility,
bucket by language and variant, create the send rows and enqueue them in chunks (DLV-03, DLV-16; delayed per
time zone, CMP-34), bump the organization's daily count and advance the cursor — the checkpoint. A hop (one task
execution) walks several pages, so the django-q2 round trip and the per-campaign reads are paid once per hop, not
per page; its last page enqueues the next hop in its transaction. With the ORM broker a page's send jobs (and the
next hop) become visible at its commit, so no page is fetched before the previous one is enqueued; a crash rolls
back only the page in progress and the re-run (the redelivered hop, which owns the job's `hop_token`) resumes from
the last checkpoint and writes it once. A duplicated or stale hop finds another token or a moved cursor and does
nothing (no forked chains).
"""

from __future__ import annotations

import datetime as dt
import logging
import time
import uuid
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from django.db import transaction
from django.db.models import F, QuerySet
from django.utils import timezone

from campaigns import audience as audience_module
from campaigns.abtest import hash_fraction, variant_for_hash
from campaigns.audience import PAGE_SIZE, Candidate, audience_page
from campaigns.lifecycle import ACTOR_ORCHESTRATOR, PAUSED, SENDING, SENT, campaign_transition
from campaigns.models import Campaign, CampaignSendJob, SendJobPhase, VariantMode
from campaigns.queues import control_queue
from campaigns.timezones import next_local_instant, zone_for

logger = logging.getLogger(__name__)

CAMPAIGN_ENQUEUE_CHUNK_SIZE = 50  # DLV-16
NO_PROVIDER_RETRY = dt.timedelta(minutes=5)  # CMP-29 [orig]
STUCK_AFTER = dt.timedelta(minutes=10)  # CMP-36
PAGE_TASK = "campaigns.tasks.campaign_resolve_page_task"


# --- bucketing (CMP-31, CMP-32, CMP-33) ---------------------------------------------------------------------


@dataclass(frozen=True)
class _Content:
    template: Any
    subject_source: str | None  # None → the resolved language's template subject


class _Contents:
    """Per-campaign content for (language, variant), prepared once per hop."""

    def __init__(self, campaign: Campaign) -> None:
        from templates.models import EmailTemplate

        self.campaign = campaign
        self.template_a = campaign.email_template
        cfg = campaign.ab_config()
        self.test_type = cfg.get("testType")
        self.b_subject = cfg.get("variantBSubject")
        self.template_b = None
        if self.test_type == "content" and cfg.get("variantBTemplateId"):
            self.template_b = EmailTemplate.objects.filter(
                pk=cfg["variantBTemplateId"], organization_id=campaign.organization_id
            ).first()

        self._subjects: dict[tuple[str | None, str | None], tuple[_Content, str, Any, str]] = {}

    def for_variant(self, variant: str | None) -> _Content:
        if variant == "B":
            if self.test_type == "subject" and self.b_subject:
                return _Content(self.template_a, self.b_subject)
            if self.test_type == "content" and self.template_b is not None:
                return _Content(self.template_b, self.campaign.subject or None)
        return _Content(self.template_a, self.campaign.subject or None)

    def subject_for(self, variant: str | None, language: str | None) -> tuple[_Content, str, Any, str]:
        """(content, resolved language, compiled subject, template id as text) per (variant, contact language),
        compiled once per hop instead of once per recipient."""
        key = (variant, language)
        hit = self._subjects.get(key)
        if hit is None:
            from campaigns.snapshot import snapshot_prepared
            from templates.rendering import compile_text, prepare_template

            content = self.for_variant(variant)
            resolved = language or content.template.default_language or "en"
            frozen = snapshot_prepared(self.campaign.pk, variant, resolved)
            if frozen is not None:  # the content scanned at send start
                compiled = frozen.subject
            elif content.subject_source:
                compiled = compile_text(content.subject_source)
            else:
                compiled = prepare_template(content.template, resolved).subject
            hit = self._subjects[key] = (content, resolved, compiled, str(content.template.pk))
        return hit


def _recipient(contents: _Contents, c: Candidate, variant: str | None, not_before: Any = None) -> Any:
    from delivery.services import CampaignRecipient

    _, language, subject, template_id = contents.subject_for(variant, c.language)
    variables = {"email": c.email, "firstName": c.first_name or "", "lastName": c.last_name or ""}
    return CampaignRecipient(
        contact_id=c.contact_id,
        email=c.email,
        first_name=c.first_name,
        last_name=c.last_name,
        email_template_id=template_id,
        personalized_subject=subject.render(variables, single_line=True),
        language=language,
        ab_variant=variant,
        not_before=not_before,
    )


def _bucket(
    job: CampaignSendJob, campaign: Campaign, eligible: list[Candidate]
) -> list[tuple[Candidate, str | None]]:
    """(candidate, variant) for the ones this phase sends: the A/B remainder is skipped in phase 1; the winner
    phase takes every candidate, and the unique send row keeps the ones already mailed out."""
    cid = str(campaign.pk)
    tf = job.test_fraction or 0.0
    out: list[tuple[Candidate, str | None]] = []
    for c in eligible:
        if job.variant_mode == VariantMode.AB_TEST:
            variant = variant_for_hash(hash_fraction(cid, c.contact_id), tf)
            if variant is not None:
                out.append((c, variant))
        elif job.variant_mode == VariantMode.AB_WINNER:
            # everyone without a send row (`create_batch` skips the rest): the held-back remainder, and a
            # test-cohort contact the test walk did not reach
            out.append((c, job.winning_variant))
        else:
            out.append((c, None))
    return out


def _send_context(campaign: Campaign) -> Any:
    from campaigns.archive import archive_public_url
    from campaigns.sender import campaign_sender
    from delivery.services import CampaignSendContext
    from owlat.models import Topic

    audience = campaign.audience or {}
    topic_id = topic_name = None
    if audience.get("kind") == "topic":
        topic = Topic.objects.filter(pk=audience.get("topicId")).values("pk", "name").first()
        if topic:
            topic_id, topic_name = str(topic["pk"]), topic["name"]
    sender = campaign_sender(campaign)
    return CampaignSendContext(
        from_email=sender.email,
        from_name=sender.name,
        reply_to=campaign.reply_to or "",
        topic_id=topic_id,
        topic_name=topic_name or "",
        view_in_browser_url=archive_public_url(campaign) or "",
        track=True,
    )


def _count_daily_sends(organization_id: Any, enqueued: int, now: dt.datetime) -> None:
    """The org's daily send count [orig], per UTC day: `daily_send_count_reset_at` is the start of the day the
    count belongs to (the capacity check, CMP-21 #9, reads today's)."""
    from campaigns.capacity import day_start
    from owlat.models import OrganizationSettings

    today = day_start(now)
    rows = OrganizationSettings.objects.filter(organization_id=organization_id)
    if not rows.filter(daily_send_count_reset_at__gte=today).update(
        daily_send_count=F("daily_send_count") + enqueued
    ):
        rows.update(daily_send_count=enqueued, daily_send_count_reset_at=today)


def _enqueue_chunks(send_ids: list[str], at: dt.datetime | None) -> int:
    """DLV-16: one pool job per chunk of `CAMPAIGN_ENQUEUE_CHUNK_SIZE` rows, delayed to `at` (CMP-34)."""
    from delivery.services import sends_enqueue

    return sends_enqueue("campaign", send_ids, at=at, chunk_size=CAMPAIGN_ENQUEUE_CHUNK_SIZE)


# --- the hop ---------------------------------------------------------------------------------------------------

PAGES_PER_HOP = 20  # `CAMPAIGN_WALK_PAGES_PER_HOP`: pages walked per task execution, each its own checkpoint
HOP_SECONDS = 30.0  # `CAMPAIGN_WALK_HOP_SECONDS`: no new page after this (far below django-q2's `timeout`)


def _hop_budget() -> tuple[int, float]:
    from django.conf import settings

    pages = int(getattr(settings, "CAMPAIGN_WALK_PAGES_PER_HOP", PAGES_PER_HOP) or 1)
    seconds = float(getattr(settings, "CAMPAIGN_WALK_HOP_SECONDS", HOP_SECONDS) or HOP_SECONDS)
    return max(1, pages), seconds


def new_hop_token() -> str:
    """The token of a hop chain link: the job row names the one hop allowed to walk (`hop_token`)."""
    return uuid.uuid4().hex


def enqueue_hop(job: CampaignSendJob, *, at: dt.datetime | None = None) -> str:
    """Hand the walk to a new hop (a fresh token saved on the job by the caller's transaction): every older hop,
    alive or redelivered, finds another token and stops."""
    from owlat.jobs import enqueue

    job.hop_token = new_hop_token()
    enqueue(PAGE_TASK, str(job.campaign_id), job.cursor, job.hop_token, at=at, queue=control_queue())
    return job.hop_token


@dataclass
class _Hop:
    """What one task execution reads once for all its pages."""

    token: str
    campaign: Campaign | None = None
    contents: _Contents | None = None
    context: Any = None
    org_tz: str | None = None
    settings_written: bool = False
    zone_instants: dict[str | None, dt.datetime] = field(default_factory=dict)


def _zone_instant(hop: _Hop, campaign: Campaign, job: CampaignSendJob, zone_name: str | None) -> dt.datetime:
    """CMP-34: the send instant of one recipient zone, the same for every page and hop of the walk: the next
    local HH:MM strictly after the walk started (`job.started_at`), not after the page's own clock, so two pages
    either side of the zone's HH:MM never get instants a day apart."""
    hit = hop.zone_instants.get(zone_name)
    if hit is None:
        hit = hop.zone_instants[zone_name] = next_local_instant(
            zone_for(zone_name, hop.org_tz),
            campaign.scheduled_hour,
            campaign.scheduled_minute,
            job.started_at,
        )
    return hit


def resolve_campaign_page(
    campaign_id: Any, expected_cursor: str = "", token: str = "", *, now: dt.datetime | None = None
) -> str:
    """One CMP-29 hop: up to `CAMPAIGN_WALK_PAGES_PER_HOP` pages (and no new page after
    `CAMPAIGN_WALK_HOP_SECONDS`), each page its own transaction that reads the page after the job's cursor,
    creates and enqueues its rows and advances the cursor — the checkpoint. The last page of the hop hands the
    walk to the next hop in its transaction.

    Who may walk: a hop carrying a token walks while the job's `hop_token` is its token (so a hop redelivered after
    its worker died resumes from the last committed page); a hop without one (the orchestrator's first hop from
    before tokens, the watchdog) only when the job's cursor is the one it expects, and then takes a fresh token.
    A duplicated or stale hop finds another token (or a moved cursor) and does nothing: no forked chains."""
    pages, seconds = _hop_budget()
    deadline = time.monotonic() + seconds
    hop = _Hop(token=token)
    result = ""
    for index in range(pages):
        last = index == pages - 1 or time.monotonic() >= deadline
        result, more = _walk_page(campaign_id, expected_cursor, hop, now=now, last=last)
        if not more or last:
            break
    return result


def _walk_page(
    campaign_id: Any, expected_cursor: str, hop: _Hop, *, now: dt.datetime | None, last: bool
) -> tuple[str, bool]:
    """One page in one transaction under the send job's row lock; returns (summary, walk goes on in this hop)."""
    now = now or timezone.now()
    with transaction.atomic():
        job, stopped = _locked_job(campaign_id, expected_cursor, hop, now)
        if job is None:
            return stopped, False
        campaign = hop.campaign
        page, enqueued = _send_page(hop, campaign, job, now)
        job.cursor = page.next_cursor
        job.enqueued_count += enqueued
        job.total_candidates += len(page.eligible)
        job.pages += 1
        job.updated_at = now
        fields = ["cursor", "enqueued_count", "total_candidates", "pages", "updated_at", "hop_token"]
        if not page.exhausted:
            if last:
                enqueue_hop(job)
            job.save(update_fields=fields)
            return f"page {job.pages}: {enqueued} enqueued", True
        job.phase, job.finished_at = SendJobPhase.DONE, now
        job.save(update_fields=[*fields, "phase", "finished_at"])
        _finish_walk(campaign, job, now)
    return f"page {job.pages}: {enqueued} enqueued; walk done ({job.enqueued_count} total)", False


def _locked_job(
    campaign_id: Any, expected_cursor: str, hop: _Hop, now: dt.datetime
) -> tuple[CampaignSendJob | None, str]:
    """The send job, locked (inside the caller's transaction), when this hop may walk its next page; else None
    and why the walk stops here (another hop owns it, paused, no longer sending, no provider yet)."""
    from delivery.providers import delivery_configured

    job = (  # the checkpoint, locked, with the campaign's status in the same statement
        CampaignSendJob.objects.select_for_update(of=("self",))
        .annotate(campaign_status=F("campaign__status"))
        .filter(campaign_id=campaign_id)
        .first()
    )
    if job is None or job.phase != SendJobPhase.RESOLVING:
        return None, "stopped: no resolving job"
    if hop.token:
        if job.hop_token != hop.token:
            return None, "stale hop: another hop owns the walk"
    elif job.cursor != (expected_cursor or ""):
        return None, "stale hop: cursor already advanced"
    else:
        hop.token = job.hop_token = new_hop_token()
    if hop.campaign is None:
        hop.campaign = Campaign.objects.select_related("email_template").filter(pk=campaign_id).first()
    # read with the lock on every page: a pause or cancel in between stops the walk at the next page
    status = job.campaign_status
    campaign = hop.campaign
    if status == PAUSED:  # the checkpoint stays; resume hands the walk to a fresh hop (`walk_resume`)
        return None, "paused: the walk waits for resume"
    if campaign is None or status != SENDING or campaign.email_template is None:
        job.phase, job.finished_at, job.updated_at = SendJobPhase.DONE, now, now
        job.save(update_fields=["phase", "finished_at", "updated_at", "hop_token"])
        return None, "stopped: campaign not sending"
    if not delivery_configured():
        job.updated_at = now
        enqueue_hop(job, at=now + NO_PROVIDER_RETRY)
        job.save(update_fields=["updated_at", "hop_token"])
        return None, "no delivery provider: retry in 5 minutes"
    return job, ""


def _send_page(hop: _Hop, campaign: Campaign, job: CampaignSendJob, now: dt.datetime) -> tuple[Any, int]:
    """The next audience page's rows inserted and handed to the pool (each local-time row at its zone's
    instant); returns (the page, rows inserted)."""
    from delivery.services import create_batch
    from owlat.organizations import organization_settings

    use_tz = (
        campaign.use_recipient_timezone
        and campaign.scheduled_hour is not None
        and campaign.scheduled_minute is not None
        and job.variant_mode in (VariantMode.PLAIN, VariantMode.AB_TEST)
    )
    if hop.contents is None:
        hop.contents = _Contents(campaign)
        hop.context = _send_context(campaign)
        hop.org_tz = organization_settings(campaign.organization_id).timezone if use_tz else None
    page = audience_page(
        campaign.organization_id,
        job.audience or campaign.audience or {},
        job.cursor,
        limit=audience_module.PAGE_SIZE,
    )
    chosen = _bucket(job, campaign, page.eligible)
    instants = {
        c.contact_id: _zone_instant(hop, campaign, job, c.timezone) if use_tz else None for c, _ in chosen
    }
    recipients = [_recipient(hop.contents, c, v, instants[c.contact_id]) for c, v in chosen]
    inserted = create_batch(
        organization_id=campaign.organization_id,
        campaign_id=campaign.pk,
        context=hop.context,
        sends=recipients,
        enqueue=False,
        write_settings=not hop.settings_written,
    )
    hop.settings_written = True
    by_zone: dict[dt.datetime | None, list[str]] = defaultdict(list)
    for c, _ in chosen:
        send_id = inserted.get(c.contact_id)
        if send_id is not None:
            by_zone[instants[c.contact_id]].append(send_id)
    for at, ids in by_zone.items():
        _enqueue_chunks(ids, at)
    if inserted:
        _count_daily_sends(campaign.organization_id, len(inserted), now)
    return page, len(inserted)


def _finish_walk(campaign: Campaign, job: CampaignSendJob, now: dt.datetime) -> None:
    """CMP-35 on the last page, then the ordinary completion check (CMP-13)."""
    from campaigns.completion import try_complete_campaign
    from delivery.services import campaign_has_sends

    empty = (job.variant_mode in (VariantMode.PLAIN, VariantMode.AB_WINNER) and job.enqueued_count == 0) or (
        job.variant_mode == VariantMode.AB_TEST and job.total_candidates == 0
    )
    if empty and not campaign_has_sends(campaign.pk):
        campaign_transition(campaign_id=campaign.pk, to=SENT, actor=ACTOR_ORCHESTRATOR, at=now)
        return
    if (
        job.variant_mode == VariantMode.AB_TEST
        and Campaign.objects.filter(pk=campaign.pk, ab_winner__isnull=False).exists()
    ):
        # a winner declared while this walk ran: its remainder phase deferred to now
        from campaigns.ab_lifecycle import REMAINDER_TASK
        from owlat.jobs import enqueue

        enqueue(REMAINDER_TASK, str(campaign.pk), queue=control_queue())
        return
    try_complete_campaign(campaign.pk)


# --- pause, resume, cancel (called by the campaign lifecycle's effects, in its transaction) -------------------


def walk_resume(campaign_id: Any, *, now: dt.datetime | None = None) -> bool:
    """A resumed campaign's walk still resolving goes on from its checkpoint in a fresh hop (any older hop finds
    another token). False when there is nothing to walk."""
    job = CampaignSendJob.objects.select_for_update().filter(campaign_id=campaign_id).first()
    if job is None or job.phase != SendJobPhase.RESOLVING:
        return False
    job.updated_at = now or timezone.now()
    enqueue_hop(job)
    job.save(update_fields=["hop_token", "updated_at"])
    return True


def walk_stop(campaign_id: Any, *, now: dt.datetime | None = None) -> bool:
    """A cancelled campaign's walk ends for good (a hop still queued finds the job done)."""
    now = now or timezone.now()
    return bool(
        CampaignSendJob.objects.filter(campaign_id=campaign_id, phase=SendJobPhase.RESOLVING).update(
            phase=SendJobPhase.DONE, finished_at=now, updated_at=now, hop_token=""
        )
    )


# --- CMP-36: stuck-walk watchdog -----------------------------------------------------------------------------------


def stuck_send_jobs(
    *, now: dt.datetime | None = None, organization_id: Any = None
) -> QuerySet[CampaignSendJob]:
    """Send jobs still `resolving` with no progress for `STUCK_AFTER` (the `sendjob_phase_updated` index);
    `organization_id` None = every organization. The watchdog re-drives them; the dashboard lists them."""
    now = now or timezone.now()
    qs = CampaignSendJob.objects.filter(
        phase=SendJobPhase.RESOLVING, updated_at__lt=now - STUCK_AFTER
    ).exclude(campaign__status=PAUSED)  # a paused walk waits on purpose
    return qs if organization_id is None else qs.filter(organization_id=organization_id)


def stuck_walks_redrive(*, now: dt.datetime | None = None) -> int:
    """Re-drive jobs still `resolving` with no progress for 10 minutes (their cursor's hop again; a hop
    still alive finds the cursor moved, so nothing runs twice)."""
    now = now or timezone.now()
    stuck = list(stuck_send_jobs(now=now).values_list("campaign_id", "cursor"))
    for campaign_id, cursor in stuck:
        with transaction.atomic():
            touched = CampaignSendJob.objects.filter(
                campaign_id=campaign_id,
                phase=SendJobPhase.RESOLVING,
                cursor=cursor,
                updated_at__lt=now - STUCK_AFTER,
            ).update(updated_at=now)
            if touched:  # a tokenless hop: it walks only from this cursor and then takes a token of its own
                from owlat.jobs import enqueue

                enqueue(PAGE_TASK, str(campaign_id), cursor, queue=control_queue())
    return len(stuck)


__all__ = [
    "PAGE_SIZE",
    "next_local_instant",
    "resolve_campaign_page",
    "stuck_send_jobs",
    "stuck_walks_redrive",
    "zone_for",
]
