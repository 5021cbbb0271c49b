"""Automations (spec automations.md AUT-01 … AUT-05).

Status fields are protected django-fsm fields whose transition bodies only apply a patch; the only
writer of every status is `automations.lifecycle`.
"""

from __future__ import annotations

import uuid

from django.db import models
from django.db.models import Q
from django_fsm import FSMField, FSMModelMixin, transition

from owlat.models import Contact, Organization
from owlat.transitions import apply_patch


class TriggerType(models.TextChoices):
    CONTACT_CREATED = "contact_created"
    CONTACT_UPDATED = "contact_updated"
    EVENT_RECEIVED = "event_received"
    TOPIC_SUBSCRIBED = "topic_subscribed"


class AutomationStatus(models.TextChoices):
    DRAFT = "draft"
    ACTIVE = "active"
    PAUSED = "paused"


class StepType(models.TextChoices):
    EMAIL = "email"
    DELAY = "delay"
    CONDITION = "condition"
    END = "end"


class RunStatus(models.TextChoices):
    RUNNING = "running"
    COMPLETED = "completed"
    CANCELLED = "cancelled"


class StepRunStatus(models.TextChoices):
    PENDING = "pending"
    EXECUTING = "executing"
    COMPLETED = "completed"
    FAILED = "failed"
    SKIPPED = "skipped"


class Automation(FSMModelMixin, models.Model):
    """AUT-01. Counters are read caches moved by atomic single-row increments (AUT-05)."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="automations")
    name = models.CharField(max_length=200)
    description = models.TextField(null=True, blank=True)
    trigger_type = models.CharField(max_length=20, choices=TriggerType.choices)
    trigger_config = models.JSONField(null=True, blank=True)
    status = FSMField(
        default=AutomationStatus.DRAFT, choices=AutomationStatus.choices, protected=True, max_length=10
    )
    stats_entered = models.PositiveIntegerField(default=0)
    stats_completed = models.PositiveIntegerField(default=0)
    stats_cancelled = models.PositiveIntegerField(default=0)
    stats_updated_at = models.DateTimeField(null=True, blank=True)
    consecutive_run_failures = models.PositiveIntegerField(default=0)
    # What the email steps' mail carries (read by delivery through delivery.mail_options).
    unsubscribe_footer = models.BooleanField(
        "Unsubscribe footer",
        default=True,
        help_text="Add a footer with the unsubscribe link to this automation's email, unless the template "
        "already contains {{unsubscribeUrl}}. Turn off only for purely transactional flows (password resets, "
        "receipts); the List-Unsubscribe header is sent either way.",
    )
    track_engagement = models.BooleanField(
        "Track opens and clicks",
        default=False,
        help_text="Add an open-tracking pixel and rewrite links for click tracking, as campaigns do "
        "(needs SITE_URL). Off by default.",
    )
    activated_at = models.DateTimeField(null=True, blank=True)
    paused_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        indexes = [
            models.Index(
                fields=["organization", "status", "trigger_type"], name="automation_org_status_trig"
            ),
            models.Index(fields=["organization", "-created_at"], name="automation_org_created"),
        ]

    def __str__(self) -> str:
        return self.name

    @property
    def stats_active(self) -> int:
        """AUT-05: never stored; entered − completed − cancelled, floor 0."""
        return max(0, self.stats_entered - self.stats_completed - self.stats_cancelled)

    # AUT-07 graph. Bodies are pure; the only caller is automations.lifecycle.
    @transition(field=status, source=AutomationStatus.DRAFT, target=AutomationStatus.ACTIVE)
    def activate(self, patch: dict) -> None:
        apply_patch(self, patch)

    @transition(field=status, source=AutomationStatus.ACTIVE, target=AutomationStatus.PAUSED)
    def pause(self, patch: dict) -> None:
        apply_patch(self, patch)

    @transition(field=status, source=AutomationStatus.PAUSED, target=AutomationStatus.ACTIVE)
    def resume(self, patch: dict) -> None:
        apply_patch(self, patch)

    @transition(field=status, source=AutomationStatus.PAUSED, target=AutomationStatus.DRAFT)
    def revert_to_draft(self, patch: dict) -> None:
        apply_patch(self, patch)


class AutomationStep(models.Model):
    """AUT-02: ordered steps; `step_index` 0-based and unique per automation."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    organization = models.ForeignKey(Organization, on_delete=models.CASCADE)
    automation = models.ForeignKey(Automation, on_delete=models.CASCADE, related_name="steps")
    step_index = models.PositiveIntegerField()
    step_type = models.CharField(max_length=10, choices=StepType.choices)
    config = models.JSONField(default=dict)
    stat_pending = models.PositiveIntegerField(default=0)
    stat_executing = models.PositiveIntegerField(default=0)
    stat_completed = models.PositiveIntegerField(default=0)
    stat_failed = models.PositiveIntegerField(default=0)
    stat_skipped = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["automation", "step_index"]
        constraints = [
            models.UniqueConstraint(fields=["automation", "step_index"], name="uniq_automation_step_index")
        ]

    def __str__(self) -> str:
        return f"{self.step_index}: {self.step_type}"


class AutomationRun(FSMModelMixin, models.Model):
    """AUT-03: one contact's pass through an automation."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    organization = models.ForeignKey(Organization, on_delete=models.CASCADE)
    automation = models.ForeignKey(Automation, on_delete=models.CASCADE, related_name="runs")
    contact = models.ForeignKey(Contact, on_delete=models.CASCADE, related_name="automation_runs")
    current_step_index = models.PositiveIntegerField(default=0)
    steps_executed = models.PositiveIntegerField(default=0)
    status = FSMField(default=RunStatus.RUNNING, choices=RunStatus.choices, protected=True, max_length=10)
    started_at = models.DateTimeField()
    completed_at = models.DateTimeField(null=True, blank=True)
    next_step_at = models.DateTimeField(null=True, blank=True)
    triggered_by = models.CharField(max_length=20, choices=TriggerType.choices)
    trigger_data = models.JSONField(null=True, blank=True)

    class Meta:
        constraints = [
            # AUT-17: two simultaneous firings never open two running runs for one (automation, contact).
            models.UniqueConstraint(
                fields=["automation", "contact"],
                condition=Q(status="running"),
                name="uniq_running_run_per_contact",
            )
        ]
        indexes = [
            models.Index(fields=["automation", "-started_at"], name="run_automation_started"),
            models.Index(fields=["automation", "status"], name="run_automation_status"),
        ]

    def __str__(self) -> str:
        return f"run {self.pk} ({self.status})"

    @transition(field=status, source=RunStatus.RUNNING, target=RunStatus.COMPLETED)
    def complete(self, patch: dict) -> None:
        apply_patch(self, patch)

    @transition(field=status, source=RunStatus.RUNNING, target=RunStatus.CANCELLED)
    def cancel(self, patch: dict) -> None:
        apply_patch(self, patch)


class AutomationStepRun(FSMModelMixin, models.Model):
    """AUT-04: one step execution of a run."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    organization = models.ForeignKey(Organization, on_delete=models.CASCADE)
    run = models.ForeignKey(AutomationRun, on_delete=models.CASCADE, related_name="step_runs")
    step = models.ForeignKey(
        AutomationStep, on_delete=models.SET_NULL, null=True, blank=True, related_name="step_runs"
    )
    step_index = models.PositiveIntegerField()
    step_type = models.CharField(max_length=10, choices=StepType.choices)
    status = FSMField(
        default=StepRunStatus.PENDING, choices=StepRunStatus.choices, protected=True, max_length=10
    )
    scheduled_at = models.DateTimeField()
    started_at = models.DateTimeField(null=True, blank=True)
    completed_at = models.DateTimeField(null=True, blank=True)
    email_send_id = models.CharField(max_length=64, null=True, blank=True)
    delay_until = models.DateTimeField(null=True, blank=True)
    error_message = models.TextField(null=True, blank=True)
    note = models.TextField(
        null=True,
        blank=True,
        help_text="Why a completed step did nothing (e.g. the email step skipped a send).",
    )
    retry_count = models.PositiveSmallIntegerField(default=0)
    attempt = models.PositiveSmallIntegerField(
        default=0,
        help_text="The attempt that holds this step run while it executes: 0 = the first dispatch, n = the nth "
        "retry. A retry claims by compare-and-set on (executing, retry_count, attempt) (AUT-21, AUT-26).",
    )
    retry_due_at = models.DateTimeField(
        null=True,
        blank=True,
        help_text="When the scheduled retry (retry_count) is due, or was last handed out again by the recovery "
        "sweep: a retry whose task was lost (Redis does not redeliver) is re-driven a lease after this.",
    )

    class Meta:
        indexes = [
            models.Index(fields=["run", "scheduled_at"], name="steprun_run_scheduled"),
            # AUT-29: the recovery cron's scan of pending rows whose delay has passed.
            models.Index(fields=["delay_until"], condition=Q(status="pending"), name="steprun_pending_delay"),
            # and its [project] sweep of immediate dispatches that were lost
            models.Index(
                fields=["scheduled_at"],
                condition=Q(status="pending", delay_until__isnull=True),
                name="steprun_pending_nodelay",
            ),
            # the recovery sweep's scan of executing rows (abandoned attempts, lost retries), every few seconds
            models.Index(fields=["started_at"], condition=Q(status="executing"), name="steprun_executing"),
        ]

    def __str__(self) -> str:
        return f"step run {self.step_index} ({self.status})"

    # AUT-04 graph. Bodies are pure; the only caller is automations.lifecycle (the claim pending → executing is
    # applied there as a compare-and-set by the set-based runner).
    @transition(field=status, source=StepRunStatus.EXECUTING, target=StepRunStatus.COMPLETED)
    def complete(self, patch: dict) -> None:
        apply_patch(self, patch)

    @transition(
        field=status, source=[StepRunStatus.PENDING, StepRunStatus.EXECUTING], target=StepRunStatus.FAILED
    )
    def fail(self, patch: dict) -> None:
        apply_patch(self, patch)

    @transition(field=status, source=StepRunStatus.PENDING, target=StepRunStatus.EXECUTING)
    def claim(self, patch: dict) -> None:
        apply_patch(self, patch)

    @transition(field=status, source=StepRunStatus.PENDING, target=StepRunStatus.SKIPPED)
    def skip(self, patch: dict) -> None:
        """AUT-23: a step bypassed by a forward branch (the row is written already skipped)."""
        apply_patch(self, patch)


class AutomationCounterDelta(models.Model):
    """A pending move of a counter: writers insert deltas instead of updating the shared
    `Automation.stats_*` / `AutomationStep.stat_*` rows, so no request or worker waits on another's counter lock;
    `automations.counters.counters_rollup` (a cron, and the backfill) folds them into the rows. Readers add the
    pending deltas (`automations.counters.counters_overlay`), so a funnel is exact before and after a roll-up.
    `automation_id` is set for the run counters (`field` = entered|completed|cancelled), `step_id` for the
    per-step counters (`field` = a step-run status). No foreign keys: an insert takes no lock on the parent."""

    id = models.BigAutoField(primary_key=True)
    automation_id = models.UUIDField(null=True, blank=True)
    step_id = models.UUIDField(null=True, blank=True)
    field = models.CharField(max_length=10)
    delta = models.IntegerField()

    class Meta:
        indexes = [
            models.Index(fields=["automation_id"], name="counterdelta_automation"),
            models.Index(fields=["step_id"], name="counterdelta_step"),
        ]

    def __str__(self) -> str:
        return f"{self.automation_id or self.step_id} {self.field} {self.delta:+d}"
