"""Delivery records (spec DLV-01 … DLV-04, D-07): per-recipient send rows, per-campaign counters, stored
attachments and the `local` provider's outbox.

The send `status` is a protected django-fsm field on both send tables; the only writer is
`delivery.lifecycle` (DLV-05). Transition bodies apply the patch they are given and nothing else.
The campaign a campaign row belongs to is referenced by id only: the delivery layer does not import the
campaigns app (style.md, Layering); campaigns reads `CampaignSendCounters` and registers completion handlers.
"""

from __future__ import annotations

import uuid

from django.db import models
from django.db.models import Q
from django.utils import timezone
from django_fsm import FSMField, FSMModelMixin, transition

from owlat.models import Contact, Organization
from owlat.transitions import apply_patch


class SendStatus(models.TextChoices):
    """DLV-04: `queued` is the only non-terminal value for completion purposes."""

    QUEUED = "queued"
    SENT = "sent"
    FAILED = "failed"
    DELIVERED = "delivered"
    OPENED = "opened"
    CLICKED = "clicked"
    BOUNCED = "bounced"
    COMPLAINED = "complained"
    CANCELLED = "cancelled"  # a campaign row still waiting when its campaign was cancelled (never sent)


class BounceType(models.TextChoices):
    HARD = "hard"
    SOFT = "soft"


class SendKind(models.TextChoices):
    """DLV-02 kinds of non-campaign rows; `campaign` is the kind of every `EmailSend`."""

    TRANSACTIONAL = "transactional"
    AUTOMATION = "automation"
    AGENT_REPLY = "agent_reply"
    TEST = "test"


S = SendStatus
_ACCEPTED = [S.SENT, S.DELIVERED, S.OPENED, S.CLICKED]


class SendRowFields(models.Model):
    """The status (with its DLV-06 graph), timestamp, bounce, engagement, error, provider and claim fields both
    tables share."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="+")
    provider_message_id = models.CharField(max_length=255, null=True, blank=True, db_index=True)
    provider_type = models.CharField(max_length=20, null=True, blank=True)
    message_id = models.CharField(
        max_length=255, null=True, blank=True, help_text="The Message-ID header, stable per send row (D-07)."
    )
    queued_at = models.DateTimeField(default=timezone.now)
    sent_at = models.DateTimeField(null=True, blank=True)
    delivered_at = models.DateTimeField(null=True, blank=True)
    failed_at = models.DateTimeField(null=True, blank=True)
    opened_at = models.DateTimeField(null=True, blank=True)
    clicked_at = models.DateTimeField(null=True, blank=True)
    bounced_at = models.DateTimeField(null=True, blank=True)
    complained_at = models.DateTimeField(null=True, blank=True)
    unsubscribed_at = models.DateTimeField(null=True, blank=True)
    bounce_type = models.CharField(max_length=4, choices=BounceType.choices, null=True, blank=True)
    open_count = models.PositiveIntegerField(default=0)
    clicked_links = models.JSONField(default=list, blank=True)
    error_message = models.TextField(null=True, blank=True)
    error_code = models.CharField(max_length=40, null=True, blank=True)
    correlation_id = models.CharField(max_length=100, null=True, blank=True)
    # D-07: claim, lease and hand-off; an unknown outcome is never re-sent automatically.
    claimed_at = models.DateTimeField(null=True, blank=True)
    claim_token = models.UUIDField(null=True, blank=True)
    handed_off_at = models.DateTimeField(null=True, blank=True)
    # whether the message handed off carried the open pixel (written with `handed_off_at`); a row without one
    # has no measurable opens, so open rates count only rows where this is true. NULL = not handed off yet.
    open_tracked = models.BooleanField(null=True, blank=True)
    outcome_unknown = models.BooleanField(default=False)
    # D-07 recovery: when the orphan sweep last handed this row to its pool again; it is not handed out again
    # before `delivery.lifecycle.redrive_lease` ran out, however long a stuck queue leaves it unclaimed.
    redriven_at = models.DateTimeField(null=True, blank=True)
    # CMP-34: the instant before which no job, sweep or retry hands the row out (a recipient-local send); NULL
    # = as soon as it is queued.
    not_before = models.DateTimeField(null=True, blank=True)
    dispatch_attempts = models.PositiveSmallIntegerField(default=0)
    deleted_at = models.DateTimeField(null=True, blank=True)

    status = FSMField(default=S.QUEUED, choices=S.choices, protected=True, max_length=12)

    class Meta:
        abstract = True

    # DLV-06 graph; bodies only apply the reducer's patch.
    @transition(field=status, source=S.QUEUED, target=S.SENT)
    def mark_sent(self, patch: dict) -> None:
        apply_patch(self, patch)

    @transition(field=status, source=[S.QUEUED, S.SENT], target=S.FAILED)
    def mark_failed(self, patch: dict) -> None:
        apply_patch(self, patch)

    @transition(field=status, source=S.QUEUED, target=S.CANCELLED)
    def mark_cancelled(self, patch: dict) -> None:
        apply_patch(self, patch)

    @transition(field=status, source=S.SENT, target=S.DELIVERED)
    def mark_delivered(self, patch: dict) -> None:
        apply_patch(self, patch)

    @transition(field=status, source=[S.SENT, S.DELIVERED], target=S.OPENED)
    def mark_opened(self, patch: dict) -> None:
        apply_patch(self, patch)

    @transition(field=status, source=[S.SENT, S.DELIVERED, S.OPENED], target=S.CLICKED)
    def mark_clicked(self, patch: dict) -> None:
        apply_patch(self, patch)

    @transition(field=status, source=[*_ACCEPTED, S.BOUNCED], target=S.BOUNCED)
    def mark_bounced(self, patch: dict) -> None:
        apply_patch(self, patch)

    @transition(field=status, source=[*_ACCEPTED, S.BOUNCED], target=S.COMPLAINED)
    def mark_complained(self, patch: dict) -> None:
        apply_patch(self, patch)


class EmailSend(FSMModelMixin, SendRowFields):
    """DLV-01 campaign send row: one per (campaign, contact), enforced by the database (DLV-03)."""

    campaign_id = models.UUIDField()
    contact = models.ForeignKey(
        Contact, on_delete=models.SET_NULL, null=True, blank=True, related_name="campaign_sends"
    )
    contact_email = models.CharField(max_length=254)
    contact_first_name = models.CharField(max_length=200, null=True, blank=True)
    contact_last_name = models.CharField(max_length=200, null=True, blank=True)
    personalized_subject = models.CharField(max_length=998, null=True, blank=True)
    ab_variant = models.CharField(max_length=1, null=True, blank=True, choices=[("A", "A"), ("B", "B")])
    language = models.CharField(max_length=16, null=True, blank=True)
    email_template = models.ForeignKey(
        "templates.EmailTemplate", on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )

    send_kind = "campaign"
    ref_kind = "campaign"

    class Meta:
        verbose_name = "campaign send"
        constraints = [
            models.UniqueConstraint(fields=["campaign_id", "contact"], name="uniq_campaign_contact_send")
        ]
        indexes = [
            models.Index(fields=["campaign_id", "status"], name="emailsend_campaign_status"),
            models.Index(fields=["organization", "-queued_at"], name="emailsend_org_queued"),
            models.Index(fields=["id"], condition=Q(status="queued"), name="emailsend_queued_partial"),
            # the fair pool's look for other organizations' waiting rows (delivery.fairness.waiting_rows)
            models.Index(
                fields=["organization", "queued_at"],
                condition=Q(status="queued"),
                name="emailsend_org_waiting",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.contact_email} ({self.status})"

    @property
    def recipient(self) -> str:
        return self.contact_email


class TransactionalSend(FSMModelMixin, SendRowFields):
    """DLV-02 non-campaign send row (transactional API, automation step, agent reply, test email)."""

    kind = models.CharField(max_length=20, choices=SendKind.choices)
    transactional_email = models.ForeignKey(
        "templates.TransactionalEmail", on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    email_template = models.ForeignKey(
        "templates.EmailTemplate", on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    automation_id = models.UUIDField(null=True, blank=True)
    inbound_message_id = models.UUIDField(null=True, blank=True)
    contact = models.ForeignKey(
        Contact, on_delete=models.SET_NULL, null=True, blank=True, related_name="transactional_sends"
    )
    email = models.CharField(max_length=254)
    subject = models.CharField(max_length=998, null=True, blank=True)
    language = models.CharField(max_length=16, null=True, blank=True)
    data_variables = models.JSONField(null=True, blank=True)
    # Content given directly (agent replies, test sends of raw content) instead of through a template.
    from_email = models.CharField(max_length=254, null=True, blank=True)
    from_name = models.CharField(max_length=200, null=True, blank=True)
    reply_to = models.CharField(max_length=254, null=True, blank=True)
    html_body = models.TextField(null=True, blank=True)
    text_body = models.TextField(null=True, blank=True)
    extra_headers = models.JSONField(default=dict, blank=True)

    ref_kind = "transactional"

    class Meta:
        verbose_name = "transactional send"
        indexes = [
            models.Index(fields=["organization", "kind", "-queued_at"], name="txsend_org_kind_queued"),
            # The admin's send lists: newest first for every kind, and per status.
            models.Index(fields=["organization", "-queued_at"], name="txsend_org_queued"),
            models.Index(fields=["organization", "status", "-queued_at"], name="txsend_org_status_queued"),
            models.Index(fields=["automation_id"], name="txsend_automation"),
            models.Index(fields=["queued_at"], condition=Q(status="queued"), name="txsend_queued_partial"),
        ]

    def __str__(self) -> str:
        return f"{self.kind} to {self.email} ({self.status})"

    @property
    def send_kind(self) -> str:
        return self.kind

    @property
    def recipient(self) -> str:
        return self.email

    @property
    def contact_email(self) -> str:
        return self.email


class SendAttachment(models.Model):
    """An attachment of a transactional send: base64 content stored, or an https URL fetched at send time.
    Deleted on the send's terminal worker outcome (DLV-11)."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="+")
    send = models.ForeignKey(TransactionalSend, on_delete=models.CASCADE, related_name="attachments")
    position = models.PositiveSmallIntegerField(default=0)
    filename = models.CharField(max_length=255)
    content_type = models.CharField(max_length=200, null=True, blank=True)
    content = models.BinaryField(null=True, blank=True)
    url = models.URLField(max_length=2000, null=True, blank=True)
    size = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ["position"]


class CampaignSendCounters(models.Model):
    """DLV-10 denormalized campaign counters, bumped only by send-lifecycle effects (atomic single-row
    increments), plus `unsubscribed` bumped by the public unsubscribe (DLV-21). The campaigns app reads them
    into its `stats_*` fields and resets them on → `sending` through `campaign_counters_reset`."""

    campaign_id = models.UUIDField(primary_key=True)
    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="+")
    sent = models.PositiveIntegerField(default=0)
    failed = models.PositiveIntegerField(default=0)
    delivered = models.PositiveIntegerField(default=0)
    opened = models.PositiveIntegerField(default=0)
    clicked = models.PositiveIntegerField(default=0)
    bounced = models.PositiveIntegerField(default=0)
    hard_bounced = models.PositiveIntegerField(default=0)
    soft_bounced = models.PositiveIntegerField(default=0)
    unsubscribed = models.PositiveIntegerField(default=0)
    updated_at = models.DateTimeField(default=timezone.now)

    COUNTERS = (
        "sent",
        "failed",
        "delivered",
        "opened",
        "clicked",
        "bounced",
        "hard_bounced",
        "soft_bounced",
        "unsubscribed",
    )

    class Meta:
        verbose_name_plural = "campaign send counters"

    def as_dict(self) -> dict[str, int]:
        return {name: getattr(self, name) for name in self.COUNTERS}


class CampaignSendSettings(models.Model):
    """What the campaign worker needs to compose a campaign's mail, given by the campaign engine with each
    `create_batch` call (from/reply-to, topic for List-Id and the footer, view-in-browser URL)."""

    campaign_id = models.UUIDField(primary_key=True)
    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="+")
    from_email = models.CharField(max_length=254)
    from_name = models.CharField(max_length=200, blank=True, default="")
    reply_to = models.CharField(max_length=254, blank=True, default="")
    topic_id = models.UUIDField(null=True, blank=True)
    topic_name = models.CharField(max_length=200, blank=True, default="")
    view_in_browser_url = models.CharField(max_length=1000, blank=True, default="")
    track = models.BooleanField(default=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name_plural = "campaign send settings"


class LocalMessage(models.Model):
    """The `local` provider's outbox (D-09): every message it "sends" is stored here for the admin."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    organization = models.ForeignKey(
        Organization, on_delete=models.CASCADE, null=True, blank=True, related_name="+"
    )
    send_kind = models.CharField(max_length=20, blank=True, default="")
    send_id = models.UUIDField(null=True, blank=True, db_index=True)
    message_id = models.CharField(max_length=255, db_index=True)
    from_email = models.CharField(max_length=400)
    to = models.TextField()
    subject = models.CharField(max_length=998, blank=True, default="")
    html = models.TextField(blank=True, default="")
    text = models.TextField(blank=True, default="")
    headers = models.JSONField(default=dict, blank=True)
    raw = models.TextField(blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        ordering = ["-created_at"]
        verbose_name = "local message"

    def __str__(self) -> str:
        return f"{self.subject} → {self.to}"


class ProviderHealth(models.Model):
    """DLV-17 provider health, one row per provider and minute: what the dispatch helper saw (success and
    latency). Workers add their in-process tallies once per job (delivery.health), never one write per send."""

    provider = models.CharField(max_length=20)
    minute = models.DateTimeField(help_text="Start of the minute (UTC) the dispatches ended in.")
    dispatches = models.PositiveIntegerField(default=0, help_text="Messages handed to the dispatch helper.")
    succeeded = models.PositiveIntegerField(default=0)
    failed = models.PositiveIntegerField(default=0, help_text="Refused or failed after the last attempt.")
    unknown = models.PositiveIntegerField(default=0, help_text="Outcome unknown (D-07).")
    attempts = models.PositiveIntegerField(default=0, help_text="Attempts, retries included.")
    latency_total_ms = models.BigIntegerField(default=0)
    latency_max_ms = models.PositiveIntegerField(default=0)
    last_error_code = models.CharField(max_length=40, blank=True, default="")

    class Meta:
        verbose_name = "provider health (per minute)"
        verbose_name_plural = "provider health"
        constraints = [
            models.UniqueConstraint(fields=["provider", "minute"], name="uniq_provider_health_minute")
        ]
        indexes = [models.Index(fields=["-minute"], name="provider_health_minute")]

    def __str__(self) -> str:
        return f"{self.provider} {self.minute:%Y-%m-%d %H:%M}"

    @property
    def success_rate(self) -> float | None:
        return self.succeeded / self.dispatches if self.dispatches else None

    @property
    def latency_avg_ms(self) -> int | None:
        return round(self.latency_total_ms / self.dispatches) if self.dispatches else None


class BounceRecord(models.Model):
    """One bounce, complaint, delay warning or auto-reply the intake received about a send row: what it said
    (kind, reason, status code, diagnostic) and where it came from (the recipient's domain and receiving
    provider). Written by `delivery.bounces.records` only; read by the admin's bounce list, the contact page and
    the deliverability alert (blocks per receiving domain)."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="+")
    send_kind = models.CharField(
        max_length=13, choices=[("campaign", "campaign"), ("transactional", "transactional")]
    )
    send_id = models.UUIDField(db_index=True)
    contact = models.ForeignKey(Contact, on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    email = models.CharField(max_length=254)
    recipient_domain = models.CharField(max_length=253, blank=True, default="")
    provider = models.CharField(max_length=40, blank=True, default="", help_text="The receiving provider.")
    kind = models.CharField(max_length=12)
    reason = models.CharField(max_length=20)
    status = models.CharField(
        max_length=12, blank=True, default="", help_text="RFC 3463 enhanced status code."
    )
    diagnostic = models.TextField(blank=True, default="", help_text="What the receiving server said.")
    reporting_mta = models.CharField(max_length=253, blank=True, default="")
    suppressed = models.BooleanField(default=False, help_text="The address was suppressed because of it.")
    received_at = models.DateTimeField(default=timezone.now)

    class Meta:
        verbose_name = "received bounce"
        ordering = ["-received_at"]
        indexes = [
            models.Index(fields=["organization", "-received_at"], name="bounce_org_received"),
            models.Index(fields=["organization", "email", "-received_at"], name="bounce_org_email"),
            models.Index(fields=["kind", "received_at"], name="bounce_kind_received"),
        ]

    def __str__(self) -> str:
        return f"{self.email}: {self.kind} ({self.reason})"
