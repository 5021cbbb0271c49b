"""Campaigns (spec campaigns.md CMP-01 … CMP-03, CMP-15, CMP-25).

A campaign row carries two independent state machines, each a protected django-fsm field whose transition
bodies only apply the patch they are given: `status` (the campaign lifecycle, written only by
`campaigns.lifecycle`) and `ab_test_status` (the A/B lifecycle, written only by `campaigns.ab_lifecycle`;
NULL is the synthetic state "none").
"""

from __future__ import annotations

import uuid
from typing import Any

from django.db import models
from django.utils import timezone
from django_fsm import RETURN_VALUE, FSMField, FSMModelMixin, transition

from owlat.models import Organization


def _apply_patch(obj: models.Model, patch: dict) -> None:
    for key, value in patch.items():
        setattr(obj, key, value)


class CampaignStatus(models.TextChoices):
    DRAFT = "draft"
    SCHEDULED = "scheduled"
    SENDING = "sending"
    SENT = "sent"
    CANCELLED = "cancelled"
    PENDING_REVIEW = "pending_review"
    PAUSED = "paused"


class AbTestStatus(models.TextChoices):
    PENDING = "pending"
    TESTING = "testing"
    WINNER_SELECTED = "winner_selected"


class AbTestType(models.TextChoices):
    SUBJECT = "subject"
    CONTENT = "content"


class WinnerCriteria(models.TextChoices):
    OPEN_RATE = "open_rate"
    CLICK_RATE = "click_rate"
    MANUAL = "manual"


C = CampaignStatus
STATS_FIELDS = (
    "stats_sent",
    "stats_failed",
    "stats_delivered",
    "stats_opened",
    "stats_clicked",
    "stats_bounced",
    "stats_hard_bounced",
    "stats_soft_bounced",
    "stats_unsubscribed",
)


class Campaign(FSMModelMixin, models.Model):
    """CMP-01. `audience` is `{"kind": "topic", "topicId"}` or `{"kind": "segment", "segmentId",
    "frozenFilters"?}` (CMP-02); `ab_test_config` holds the CMP-15 keys in their spec spelling."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="campaigns")
    name = models.CharField(max_length=200)
    email_template = models.ForeignKey(
        "templates.EmailTemplate", on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    status = FSMField(default=C.DRAFT, choices=C.choices, protected=True, max_length=20)
    from_name = models.CharField(max_length=200, null=True, blank=True)
    from_email = models.CharField(max_length=254, null=True, blank=True)
    reply_to = models.CharField(max_length=254, null=True, blank=True)
    subject = models.CharField(
        max_length=998, null=True, blank=True, help_text="Overrides the template's subject when set."
    )
    audience = models.JSONField(null=True, blank=True)
    scheduled_at = models.DateTimeField(null=True, blank=True)
    sent_at = models.DateTimeField(null=True, blank=True)
    cancelled_at = models.DateTimeField(null=True, blank=True)
    paused_at = models.DateTimeField(null=True, blank=True)
    use_recipient_timezone = models.BooleanField(default=False)
    scheduled_hour = models.PositiveSmallIntegerField(null=True, blank=True)
    scheduled_minute = models.PositiveSmallIntegerField(null=True, blank=True)
    # DLV-10 counters, rolled up from delivery's CampaignSendCounters while sending (CMP-14).
    stats_sent = models.PositiveIntegerField(default=0)
    stats_failed = models.PositiveIntegerField(default=0)
    stats_delivered = models.PositiveIntegerField(default=0)
    stats_opened = models.PositiveIntegerField(default=0)
    stats_clicked = models.PositiveIntegerField(default=0)
    stats_bounced = models.PositiveIntegerField(default=0)
    stats_hard_bounced = models.PositiveIntegerField(default=0)
    stats_soft_bounced = models.PositiveIntegerField(default=0)
    stats_unsubscribed = models.PositiveIntegerField(default=0)
    stats_updated_at = models.DateTimeField(null=True, blank=True)
    # A/B (CMP-15, CMP-16)
    is_ab_test = models.BooleanField(default=False)
    ab_test_config = models.JSONField(null=True, blank=True)
    ab_test_status = FSMField(
        null=True, blank=True, default=None, choices=AbTestStatus.choices, protected=True, max_length=20
    )
    ab_winner = models.CharField(max_length=1, null=True, blank=True, choices=[("A", "A"), ("B", "B")])
    ab_winner_selected_at = models.DateTimeField(null=True, blank=True)
    # archive (CMP-27, CMP-37)
    archive_enabled = models.BooleanField(
        null=True, blank=True, help_text="Empty: follow the organization's campaigns.archive feature flag."
    )
    archive_token = models.CharField(max_length=32, null=True, blank=True, unique=True)
    archive_html_content = models.TextField(null=True, blank=True)
    archive_subject = models.CharField(max_length=998, null=True, blank=True)
    content_block_reason = models.TextField(null=True, blank=True)
    # CMP-12: the content fingerprint a reviewer approved; the scan gate passes identical content.
    approved_content_fingerprint = models.CharField(max_length=64, null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        indexes = [
            models.Index(fields=["organization", "status"], name="campaign_org_status"),
            models.Index(fields=["organization", "-created_at", "-id"], name="campaign_org_created"),
            models.Index(fields=["status", "scheduled_at"], name="campaign_status_sched"),
        ]

    def __str__(self) -> str:
        return self.name

    # --- CMP-05: the spec's ten edges, plus pause, resume and cancel of a send. Bodies are pure; the only
    # caller is campaigns.lifecycle. ----------------------------------------------------------------------
    @transition(field=status, source=C.DRAFT, target=C.SCHEDULED)
    def schedule(self, patch: dict) -> None:
        _apply_patch(self, patch)

    @transition(field=status, source=[C.DRAFT, C.SCHEDULED, C.PENDING_REVIEW], target=C.SENDING)
    def start_sending(self, patch: dict) -> None:
        _apply_patch(self, patch)

    @transition(field=status, source=[C.SCHEDULED, C.SENDING, C.PENDING_REVIEW], target=C.DRAFT)
    def return_to_draft(self, patch: dict) -> None:
        _apply_patch(self, patch)

    @transition(field=status, source=[C.SCHEDULED, C.SENDING, C.PAUSED], target=C.CANCELLED)
    def cancel(self, patch: dict) -> None:
        _apply_patch(self, patch)

    @transition(field=status, source=C.SENDING, target=C.PAUSED)
    def pause(self, patch: dict) -> None:
        _apply_patch(self, patch)

    @transition(field=status, source=C.PAUSED, target=C.SENDING)
    def resume(self, patch: dict) -> None:
        _apply_patch(self, patch)

    @transition(field=status, source=C.SENDING, target=C.SENT)
    def complete(self, patch: dict) -> None:
        _apply_patch(self, patch)

    @transition(field=status, source=C.SENDING, target=C.PENDING_REVIEW)
    def flag_for_review(self, patch: dict) -> None:
        _apply_patch(self, patch)

    # --- CMP-16: the A/B graph; NULL is "none". The only caller is campaigns.ab_lifecycle. -----------------
    @transition(field=ab_test_status, source=None, target=AbTestStatus.PENDING)
    def enable_ab_test(self, patch: dict) -> None:
        _apply_patch(self, patch)

    @transition(field=ab_test_status, source=AbTestStatus.PENDING, target=AbTestStatus.TESTING)
    def start_ab_testing(self, patch: dict) -> None:
        _apply_patch(self, patch)

    @transition(field=ab_test_status, source=AbTestStatus.TESTING, target=AbTestStatus.WINNER_SELECTED)
    def select_ab_winner(self, patch: dict) -> None:
        _apply_patch(self, patch)

    @transition(field=ab_test_status, source="*", target=RETURN_VALUE(None))
    def disable_ab_test(self, patch: dict) -> None:
        """any → none: the target is NULL, which django-fsm can only express as a return value."""
        _apply_patch(self, patch)

    # --- reads ---------------------------------------------------------------------------------------------
    @property
    def audience_kind(self) -> str | None:
        return (self.audience or {}).get("kind") if isinstance(self.audience, dict) else None

    def ab_config(self) -> dict[str, Any]:
        return dict(self.ab_test_config or {}) if isinstance(self.ab_test_config, dict) else {}


class SendJobPhase(models.TextChoices):
    RESOLVING = "resolving"
    DONE = "done"


class VariantMode(models.TextChoices):
    PLAIN = "plain"
    AB_TEST = "ab_test"
    AB_WINNER = "ab_winner"


class CampaignSendJob(models.Model):
    """CMP-03: the checkpoint of the paged recipient walk, at most one per campaign. `phase` and the cursor
    are written only by `campaigns.walker`."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="+")
    campaign = models.OneToOneField(Campaign, on_delete=models.CASCADE, related_name="send_job")
    phase = models.CharField(max_length=10, choices=SendJobPhase.choices, default=SendJobPhase.RESOLVING)
    variant_mode = models.CharField(max_length=10, choices=VariantMode.choices, default=VariantMode.PLAIN)
    test_fraction = models.FloatField(null=True, blank=True)
    split_percentage = models.PositiveSmallIntegerField(null=True, blank=True)
    winning_variant = models.CharField(max_length=1, null=True, blank=True)
    cursor = models.CharField(max_length=64, blank=True, default="")
    # the one page hop allowed to walk (campaigns.walker): a hop whose token this is not does nothing
    hop_token = models.CharField(max_length=32, blank=True, default="")
    audience = models.JSONField(null=True, blank=True)
    enqueued_count = models.PositiveIntegerField(default=0)
    total_candidates = models.PositiveIntegerField(default=0)
    pages = models.PositiveIntegerField(default=0)
    started_at = models.DateTimeField()
    updated_at = models.DateTimeField()
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        indexes = [models.Index(fields=["phase", "updated_at"], name="sendjob_phase_updated")]

    def __str__(self) -> str:
        return f"send job of {self.campaign_id} ({self.phase})"


class ScanLevel(models.TextChoices):
    CLEAN = "clean"
    SUSPICIOUS = "suspicious"
    BLOCKED = "blocked"


class ContentScanResult(models.Model):
    """CMP-25: a non-clean content-scan result of a campaign (resource `campaign`). `flags` is a list of
    `{rule, severity, description}`; DLV-11 appends the complaint flag to the latest one."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="+")
    resource = models.CharField(max_length=20, default="campaign")
    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="scan_results")
    score = models.PositiveSmallIntegerField()
    level = models.CharField(max_length=12, choices=ScanLevel.choices)
    flags = models.JSONField(default=list, blank=True)
    fingerprint = models.CharField(max_length=64, blank=True, default="")
    scanned_at = models.DateTimeField()

    class Meta:
        ordering = ["-scanned_at"]
        indexes = [models.Index(fields=["campaign", "-scanned_at"], name="scan_campaign_scanned")]

    def __str__(self) -> str:
        return f"{self.level} ({self.score}/100)"


class CampaignReview(Campaign):
    """The review queue's view of campaigns held by the content scan (CMP-12; platform staff only)."""

    class Meta:
        proxy = True
        verbose_name = "campaign held for review"
        verbose_name_plural = "review queue"


class CampaignContentSnapshot(models.Model):
    """What a campaign sends, frozen at its content scan: one row per (variant, language) with the rendered,
    pre-personalisation sources (placeholders such as `{{firstName}}` still in them, CSS inlined). The scan
    covers every row; dispatch, the walker's subjects and the archive read only these, so editing the template
    during a send changes nothing already scanned. Rewritten by the next scan that passes (a new send)."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="+")
    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="content_snapshots")
    variant = models.CharField(max_length=1, choices=[("A", "A"), ("B", "B")])
    language = models.CharField(max_length=35)
    is_default_language = models.BooleanField(default=False)
    template_id = models.UUIDField(null=True, blank=True)
    subject = models.TextField(blank=True, default="")
    preheader = models.TextField(blank=True, default="")
    html = models.TextField(blank=True, default="")
    text = models.TextField(blank=True, default="")
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["campaign", "variant", "language"], name="uniq_campaign_snapshot")
        ]

    def __str__(self) -> str:
        return f"{self.campaign_id} {self.variant}/{self.language}"
