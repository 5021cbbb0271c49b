"""The inbox's messages (AGT-01, AGT-03): threads, inbound messages with their processing status, the agent's
actions (one per pipeline step) and the admin's review and quarantine queues (proxies).

`InboundMessage.processing_status` and `AgentAction.status` are protected django-fsm fields whose transition
bodies only apply a patch; the only writer of both is `inbox.lifecycle`.
"""

from __future__ import annotations

import uuid

from django.db import models
from django.db.models import Q
from django_fsm import FSMField, FSMModelMixin, transition

from owlat.models import Contact, Organization


def _apply_patch(obj: models.Model, patch: dict) -> None:
    for key, value in patch.items():
        setattr(obj, key, value)


class ProcessingStatus(models.TextChoices):
    """AGT-04."""

    RECEIVED = "received"
    SECURITY_CHECK = "security_check"
    QUARANTINED = "quarantined"
    CLASSIFYING = "classifying"
    AWAITING_CLARIFICATION = "awaiting_clarification"
    DRAFTING = "drafting"
    DRAFT_READY = "draft_ready"
    APPROVED = "approved"
    SENT = "sent"
    REJECTED = "rejected"
    ARCHIVED = "archived"
    FAILED = "failed"


P = ProcessingStatus
TERMINAL = (P.SENT, P.REJECTED, P.ARCHIVED)
NON_TERMINAL = [s for s in P if s not in TERMINAL]


class ActionStatus(models.TextChoices):
    """AGT-09."""

    PENDING = "pending"
    RUNNING = "running"
    COMPLETED = "completed"
    FAILED = "failed"
    ABANDONED = "abandoned"
    SKIPPED = "skipped"


class StepKind(models.TextChoices):
    """AGT-12; `clarify` (AGT-18) runs between classify and draft when the organization switched it on."""

    SECURITY_SCAN = "security_scan"
    CONTEXT_RETRIEVAL = "context_retrieval"
    CLASSIFY = "classify"
    CLARIFY = "clarify"
    DRAFT = "draft"
    ROUTE = "route"


class ThreadStatus(models.TextChoices):
    OPEN = "open"
    WAITING = "waiting"
    RESOLVED = "resolved"
    CLOSED = "closed"


class DraftStatus(models.TextChoices):
    PENDING = "pending"
    APPROVED = "approved"
    REJECTED = "rejected"
    SENT = "sent"


class ConversationThread(models.Model):
    """AGT-03. `latest_draft_status` is written only by the processing lifecycle's effect."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    organization = models.ForeignKey(Organization, on_delete=models.CASCADE)
    contact = models.ForeignKey(Contact, on_delete=models.SET_NULL, null=True, blank=True)
    subject = models.CharField(max_length=998, blank=True, default="")
    normalized_subject = models.CharField(max_length=998, blank=True, default="")
    status = models.CharField(max_length=10, choices=ThreadStatus.choices, default=ThreadStatus.OPEN)
    assigned_to = models.CharField(max_length=200, null=True, blank=True)
    latest_draft_status = models.CharField(max_length=10, choices=DraftStatus.choices, null=True, blank=True)
    last_message_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        indexes = [
            models.Index(fields=["organization", "contact", "normalized_subject"], name="thread_contact_subj")
        ]

    def __str__(self) -> str:
        return self.subject or f"thread {self.pk}"


class InboundMessage(FSMModelMixin, models.Model):
    """AGT-01."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="inbound_messages")
    message_id = models.CharField(max_length=998)
    from_email = models.CharField(max_length=254)
    from_name = models.CharField(max_length=200, blank=True, default="")
    to = models.JSONField(default=list, blank=True)
    subject = models.CharField(max_length=998, blank=True, default="")
    text_body = models.TextField(null=True, blank=True)
    html_body = models.TextField(null=True, blank=True)
    in_reply_to = models.CharField(max_length=998, null=True, blank=True)
    references = models.TextField(null=True, blank=True)
    headers = models.JSONField(null=True, blank=True)
    attachment_meta = models.JSONField(null=True, blank=True)
    spf_result = models.CharField(max_length=16, null=True, blank=True)
    dkim_result = models.CharField(max_length=16, null=True, blank=True)
    dmarc_result = models.CharField(max_length=16, null=True, blank=True)
    #: the From domain is DMARC-aligned authenticated (inbox.sender_auth); only then may a reply go out unreviewed
    sender_authenticated = models.BooleanField(default=False)
    sender_auth_detail = models.CharField(max_length=200, blank=True, default="")
    thread = models.ForeignKey(
        ConversationThread, on_delete=models.SET_NULL, null=True, blank=True, related_name="messages"
    )
    contact = models.ForeignKey(
        Contact, on_delete=models.SET_NULL, null=True, blank=True, related_name="inbound_messages"
    )
    processing_status = FSMField(
        default=P.RECEIVED, choices=P.choices, protected=True, max_length=24, db_index=True
    )
    security_flags = models.JSONField(null=True, blank=True)
    classification = models.JSONField(null=True, blank=True)
    draft_response = models.TextField(null=True, blank=True)
    draft_subject = models.CharField(max_length=998, null=True, blank=True)
    draft_options = models.JSONField(null=True, blank=True)
    confidence_score = models.FloatField(null=True, blank=True)
    draft_quality = models.JSONField(null=True, blank=True)
    context_tier = models.CharField(max_length=10, null=True, blank=True)
    context_coverage = models.JSONField(null=True, blank=True)
    grounding_sources = models.JSONField(null=True, blank=True)
    agent_decision = models.JSONField(null=True, blank=True)
    agent_note = models.CharField(max_length=200, null=True, blank=True)
    pending_auto_send = models.JSONField(null=True, blank=True)
    approval_source = models.CharField(max_length=5, null=True, blank=True)
    is_auto_send_blocked = models.BooleanField(default=False)
    released_content_hash = models.CharField(
        max_length=64, null=True, blank=True, help_text="Content released from quarantine by an operator."
    )
    archive_reason = models.CharField(max_length=40, null=True, blank=True)
    draft_revisions = models.JSONField(default=list, blank=True)
    is_draft_edited = models.BooleanField(default=False)
    draft_saved_at = models.DateTimeField(null=True, blank=True)
    error_message = models.TextField(null=True, blank=True)
    received_at = models.DateTimeField()
    processed_at = models.DateTimeField(null=True, blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["organization", "message_id"], name="uniq_inbound_message_id")
        ]
        indexes = [
            models.Index(
                fields=["organization", "processing_status", "-received_at"], name="inbound_org_status"
            ),
            models.Index(fields=["organization", "-received_at", "-id"], name="inbound_org_received"),
        ]

    def __str__(self) -> str:
        return f"{self.subject or '(no subject)'} from {self.from_email}"

    # AGT-05 graph. Bodies are pure; the only caller is inbox.lifecycle.
    @transition(field=processing_status, source=P.RECEIVED, target=P.SECURITY_CHECK)
    def start_scan(self, patch: dict) -> None:
        _apply_patch(self, patch)

    @transition(field=processing_status, source=P.SECURITY_CHECK, target=P.CLASSIFYING)
    def pass_scan(self, patch: dict) -> None:
        _apply_patch(self, patch)

    @transition(field=processing_status, source=P.SECURITY_CHECK, target=P.QUARANTINED)
    def quarantine(self, patch: dict) -> None:
        _apply_patch(self, patch)

    @transition(field=processing_status, source=[P.QUARANTINED, P.FAILED], target=P.RECEIVED)
    def restart(self, patch: dict) -> None:
        _apply_patch(self, patch)

    @transition(field=processing_status, source=P.CLASSIFYING, target=P.AWAITING_CLARIFICATION)
    def await_clarification(self, patch: dict) -> None:
        _apply_patch(self, patch)

    @transition(field=processing_status, source=[P.CLASSIFYING, P.AWAITING_CLARIFICATION], target=P.DRAFTING)
    def start_drafting(self, patch: dict) -> None:
        _apply_patch(self, patch)

    @transition(field=processing_status, source=[P.CLASSIFYING, P.DRAFTING, P.APPROVED], target=P.DRAFT_READY)
    def ready_draft(self, patch: dict) -> None:
        _apply_patch(self, patch)

    @transition(field=processing_status, source=[P.DRAFTING, P.DRAFT_READY], target=P.APPROVED)
    def approve(self, patch: dict) -> None:
        _apply_patch(self, patch)

    @transition(field=processing_status, source=P.APPROVED, target=P.SENT)
    def mark_sent(self, patch: dict) -> None:
        _apply_patch(self, patch)

    @transition(field=processing_status, source=P.DRAFT_READY, target=P.REJECTED)
    def reject(self, patch: dict) -> None:
        _apply_patch(self, patch)

    @transition(field=processing_status, source=NON_TERMINAL, target=P.ARCHIVED)
    def archive(self, patch: dict) -> None:
        _apply_patch(self, patch)

    @transition(field=processing_status, source=[s for s in NON_TERMINAL if s != P.FAILED], target=P.FAILED)
    def fail(self, patch: dict) -> None:
        _apply_patch(self, patch)


class AgentAction(FSMModelMixin, models.Model):
    """AGT-09: one row per executed step; a reset (`pending`) row is reused by the next run of its kind."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    organization = models.ForeignKey(Organization, on_delete=models.CASCADE)
    inbound_message = models.ForeignKey(InboundMessage, on_delete=models.CASCADE, related_name="actions")
    action_type = models.CharField(max_length=20, choices=StepKind.choices)
    status = FSMField(
        default=ActionStatus.PENDING, choices=ActionStatus.choices, protected=True, max_length=10
    )
    input = models.JSONField(null=True, blank=True)
    output = models.JSONField(null=True, blank=True)
    error_message = models.TextField(null=True, blank=True)
    retry_count = models.PositiveSmallIntegerField(default=0)
    scheduled_at = models.DateTimeField(
        null=True,
        blank=True,
        help_text="When its task was enqueued; empty while a reset row waits for reuse.",
    )
    started_at = models.DateTimeField(null=True, blank=True)
    completed_at = models.DateTimeField(null=True, blank=True)
    duration_ms = models.PositiveIntegerField(null=True, blank=True)
    model_used = models.CharField(max_length=200, null=True, blank=True)
    token_usage = models.JSONField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["created_at"]
        indexes = [
            models.Index(fields=["inbound_message", "created_at"], name="action_message_created"),
            models.Index(
                fields=["status", "retry_count"], condition=Q(status="failed"), name="action_failed"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.action_type} ({self.status})"

    # The claim pending → running is a compare-and-set in inbox.lifecycle (`action_claim`).
    @transition(field=status, source=ActionStatus.PENDING, target=ActionStatus.RUNNING)
    def claim(self, patch: dict) -> None:
        _apply_patch(self, patch)

    @transition(field=status, source=ActionStatus.RUNNING, target=ActionStatus.COMPLETED)
    def complete(self, patch: dict) -> None:
        _apply_patch(self, patch)

    @transition(field=status, source=[ActionStatus.PENDING, ActionStatus.RUNNING], target=ActionStatus.FAILED)
    def fail(self, patch: dict) -> None:
        _apply_patch(self, patch)

    @transition(
        field=status, source=[ActionStatus.PENDING, ActionStatus.RUNNING], target=ActionStatus.ABANDONED
    )
    def abandon(self, patch: dict) -> None:
        _apply_patch(self, patch)

    @transition(
        field=status, source=[ActionStatus.FAILED, ActionStatus.ABANDONED], target=ActionStatus.PENDING
    )
    def reset(self, patch: dict) -> None:
        _apply_patch(self, patch)


class ReviewQueueMessage(InboundMessage):
    """Admin review queue: messages in `draft_ready`."""

    class Meta:
        proxy = True
        verbose_name = "message to review"
        verbose_name_plural = "review queue"


class QuarantinedMessage(InboundMessage):
    """Admin quarantine queue: messages in `quarantined`."""

    class Meta:
        proxy = True
        verbose_name = "quarantined message"
        verbose_name_plural = "quarantine"
