"""Sending identity and reputation (DOM-12, DLV-11): sending domains, curated campaign senders, daily sending
statistics."""

from __future__ import annotations

import uuid

from django.db import models
from django.db.models import Q
from django_fsm import FSMField, FSMModelMixin, transition

from owlat.models.organizations import Organization
from owlat.transitions import apply_patch


class DomainStatus(models.TextChoices):
    REGISTERING = "registering"
    PENDING = "pending"
    VERIFIED = "verified"
    FAILED = "failed"


class Domain(FSMModelMixin, models.Model):
    """DOM-12 sending domain. `status` is written only by `owlat.domains.lifecycle` (the verification lifecycle,
    DOM-20); `dns_records` is what the operator must publish, `dns_checks` what the last DNS check found."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="domains")
    domain = models.CharField(max_length=253)
    status = FSMField(
        max_length=12, choices=DomainStatus.choices, default=DomainStatus.REGISTERING, protected=True
    )
    dns_records = models.JSONField(default=list, blank=True)
    dns_checks = models.JSONField(default=dict, blank=True)
    verification_token = models.CharField(max_length=64, blank=True, default="")
    last_verified_at = models.DateTimeField(null=True, blank=True)
    last_checked_at = models.DateTimeField(null=True, blank=True)
    #: Set when platform staff marked the domain verified without DNS (local setups); audited.
    verification_overridden_at = models.DateTimeField(null=True, blank=True)
    #: Set when the staff override verified the domain while its DKIM key was not published: its mail goes out
    #: unsigned (with warnings) until a check finds the key; cleared then.
    dkim_waived_at = models.DateTimeField(null=True, blank=True)
    provider_type = models.CharField(max_length=20, null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["organization", "domain"], name="uniq_org_domain"),
            # a domain is verified by one organization only (others may have it pending: DNS decides)
            models.UniqueConstraint(
                fields=["domain"], condition=models.Q(status="verified"), name="uniq_verified_domain"
            ),
        ]

    def __str__(self) -> str:
        return self.domain

    # Verification lifecycle (DOM-12, DOM-20); bodies are pure, the writer is owlat.domains.lifecycle.
    @transition(field=status, source=DomainStatus.REGISTERING, target=DomainStatus.PENDING)
    def register(self, patch: dict) -> None:
        apply_patch(self, patch)

    @transition(
        field=status,
        source=[DomainStatus.REGISTERING, DomainStatus.PENDING, DomainStatus.FAILED],
        target=DomainStatus.VERIFIED,
    )
    def verify(self, patch: dict) -> None:
        apply_patch(self, patch)

    @transition(
        field=status, source=[DomainStatus.PENDING, DomainStatus.VERIFIED], target=DomainStatus.FAILED
    )
    def fail(self, patch: dict) -> None:
        apply_patch(self, patch)


class DkimKey(models.Model):
    """A DKIM key of a sending domain. The private key is stored encrypted
    (`owlat.domains.keys`). Rotation with overlap: a new key is published next to the old one; the old one signs
    until the new one's DNS record verifies, then it is retired (its record is no longer required)."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="dkim_keys")
    domain = models.ForeignKey(Domain, on_delete=models.CASCADE, related_name="dkim_keys")
    selector = models.CharField(max_length=63)
    public_key = models.TextField(help_text="Base64 of the DER SubjectPublicKeyInfo, as published in p=.")
    private_key_encrypted = models.TextField()
    created_at = models.DateTimeField(auto_now_add=True)
    verified_at = models.DateTimeField(null=True, blank=True)
    retired_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["domain", "selector"], name="uniq_dkim_selector")]
        ordering = ("-created_at",)

    def __str__(self) -> str:
        return f"{self.selector}._domainkey.{self.domain.domain}"


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
