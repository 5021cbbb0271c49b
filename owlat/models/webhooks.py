"""Customer webhooks (DOM-18): endpoints, the delivery outbox and the per-attempt log."""

from __future__ import annotations

import uuid

from django.db import models

from owlat.models.organizations import Organization
from owlat.outbound import validate_outbound_url


class WebhookEndpoint(models.Model):
    """DOM-18: a customer's receiver of outbound events."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="webhook_endpoints")
    url = models.URLField(max_length=1000, validators=[validate_outbound_url])
    secret = models.CharField(max_length=100)
    events = models.JSONField(default=list, help_text="Event types to receive; empty = all.")
    is_active = models.BooleanField(default=True)
    description = models.CharField(max_length=200, blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return self.url


class WebhookDeliveryStatus(models.TextChoices):
    PENDING = "pending"
    SUCCEEDED = "succeeded"
    FAILED = "failed"


class WebhookDelivery(models.Model):
    """DOM-18 outbox: one row per (event, endpoint), written in the event's transaction."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    organization = models.ForeignKey(Organization, on_delete=models.CASCADE)
    endpoint = models.ForeignKey(WebhookEndpoint, on_delete=models.CASCADE, related_name="deliveries")
    event_id = models.UUIDField(default=uuid.uuid4, db_index=True)
    event_type = models.CharField(max_length=40)
    payload = models.JSONField()
    status = models.CharField(max_length=10, choices=WebhookDeliveryStatus.choices, default="pending")
    attempts = models.PositiveSmallIntegerField(default=0)
    next_attempt_at = models.DateTimeField(null=True, blank=True)
    last_attempt_at = models.DateTimeField(null=True, blank=True)
    last_status_code = models.IntegerField(null=True, blank=True)
    last_error = models.TextField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    delivered_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        verbose_name_plural = "webhook deliveries"


class WebhookAttempt(models.Model):
    """DOM-18 delivery log: one row per HTTP attempt."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    delivery = models.ForeignKey(WebhookDelivery, on_delete=models.CASCADE, related_name="attempt_log")
    attempt = models.PositiveSmallIntegerField()
    status_code = models.IntegerField(null=True, blank=True)
    error = models.TextField(null=True, blank=True)
    duration_ms = models.PositiveIntegerField(default=0)
    attempted_at = models.DateTimeField(auto_now_add=True)
