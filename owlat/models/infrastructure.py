"""Infrastructure rows behind background work and the API (D-05, D-15, API-04, API-11): due tasks, wake-ups,
worker heartbeats, idempotency records, rate buckets. No domain meaning; nothing here is shown to customers."""

from __future__ import annotations

from django.db import models

from owlat.models.organizations import ApiKey


class DueTask(models.Model):
    """Work due later: handed to django-q2 by `run_due_tasks` when due (D-05)."""

    func = models.CharField(max_length=200)
    args = models.JSONField(default=list)
    kwargs = models.JSONField(default=dict)
    queue = models.CharField(max_length=40, null=True, blank=True)
    due_at = models.DateTimeField()
    lease_until = models.DateTimeField(null=True, blank=True)
    attempts = models.PositiveSmallIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        indexes = [models.Index(fields=["due_at"], name="duetask_due_at")]

    def __str__(self) -> str:
        return f"{self.func} at {self.due_at:%Y-%m-%d %H:%M:%S}"


class WakeUp(models.Model):
    """At most one pending wake-up per argument-less task (`owlat.wakeups`): the row exists from
    the transaction that enqueued the task until the task starts and takes it; meanwhile further wake-ups of that
    task add nothing to the queue."""

    func = models.CharField(primary_key=True, max_length=200)
    queue = models.CharField(max_length=40, null=True, blank=True)
    created_at = models.DateTimeField()

    def __str__(self) -> str:
        return f"{self.func} pending since {self.created_at:%Y-%m-%d %H:%M:%S}"


class WorkerHeartbeat(models.Model):
    """D-15: last sign of life per worker process kind (dispatcher, queues)."""

    name = models.CharField(primary_key=True, max_length=100)
    beat_at = models.DateTimeField()
    pid = models.IntegerField(null=True, blank=True)
    host = models.CharField(max_length=200, blank=True, default="")


class IdempotencyRecord(models.Model):
    """API-11: keyed by (API key, header value); keeps the fingerprint and the stored response."""

    api_key = models.ForeignKey(ApiKey, on_delete=models.CASCADE)
    key = models.CharField(max_length=255)
    fingerprint = models.CharField(max_length=64)
    completed = models.BooleanField(default=False)
    response_status = models.PositiveSmallIntegerField(null=True, blank=True)
    response_body = models.JSONField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["api_key", "key"], name="uniq_idempotency_key")]


class RateBucket(models.Model):
    """A token bucket shared by every process (API-04 per key, D-06 pool pacing)."""

    key = models.CharField(primary_key=True, max_length=120)
    tokens = models.FloatField()
    updated_at = models.FloatField(help_text="Unix seconds of the last refill.")
