"""Sending identity and reputation (DOM-12, DLV-11): sending domains, curated campaign senders, daily sending
statistics."""

from __future__ import annotations

import uuid

from django.db import models
from django.db.models import Q

from owlat.models.organizations import Organization


class DomainStatus(models.TextChoices):
    REGISTERING = "registering"
    PENDING = "pending"
    VERIFIED = "verified"
    FAILED = "failed"


class Domain(models.Model):
    """DOM-12 sending domain."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="domains")
    domain = models.CharField(max_length=253)
    status = models.CharField(max_length=12, choices=DomainStatus.choices, default=DomainStatus.PENDING)
    dns_records = models.JSONField(default=dict, blank=True)
    last_verified_at = models.DateTimeField(null=True, blank=True)
    provider_type = models.CharField(max_length=20, null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["organization", "domain"], name="uniq_org_domain")]

    def __str__(self) -> str:
        return self.domain


class CampaignSender(models.Model):
    """DOM-12 curated campaign senders."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="campaign_senders")
    email = models.CharField(max_length=254)
    display_name = models.CharField(max_length=200, null=True, blank=True)
    is_enabled = models.BooleanField(default=True)
    is_default = models.BooleanField(default=False)
    created_by = models.CharField(max_length=100, blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["organization", "email"], name="uniq_campaign_sender"),
            models.UniqueConstraint(
                fields=["organization"], condition=Q(is_default=True), name="one_default_campaign_sender"
            ),
        ]

    def __str__(self) -> str:
        return self.email


class SendingStat(models.Model):
    """DLV-11 daily per-organization counters and sending-reputation events per sender domain (one row per
    organization, UTC day and sender domain). Written only by `owlat.sending_stats` from send-lifecycle effects."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="sending_stats")
    day = models.DateField()
    sender_domain = models.CharField(max_length=253, blank=True, default="")
    sent = models.IntegerField(default=0)
    failed = models.IntegerField(default=0)
    delivered = models.IntegerField(default=0)
    opened = models.IntegerField(default=0)
    clicked = models.IntegerField(default=0)
    bounced = models.IntegerField(default=0)
    hard_bounced = models.IntegerField(default=0)
    soft_bounced = models.IntegerField(default=0)
    complained = models.IntegerField(default=0)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["organization", "day", "sender_domain"], name="uniq_sending_stat")
        ]
