"""Who hears from an organization (DOM-08…10): topics and memberships with consent proof, segments, the
suppression list."""

from __future__ import annotations

import uuid

from django.db import models

from owlat.models.contacts import Contact
from owlat.models.organizations import Organization


class Topic(models.Model):
    """DOM-08."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="topics")
    name = models.CharField(max_length=200)
    description = models.TextField(null=True, blank=True)
    display_order = models.IntegerField(null=True, blank=True)
    is_default = models.BooleanField(default=False)
    require_double_opt_in = models.BooleanField(default=True)
    cached_member_count = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["display_order", "name"]

    def __str__(self) -> str:
        return self.name


class ContactTopic(models.Model):
    """A topic membership with its consent proof (D-14). Written only by `owlat.topics`."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    organization = models.ForeignKey(Organization, on_delete=models.CASCADE)
    contact = models.ForeignKey(Contact, on_delete=models.CASCADE, related_name="topic_memberships")
    topic = models.ForeignKey(Topic, on_delete=models.CASCADE, related_name="memberships")
    added_at = models.DateTimeField(auto_now_add=True)
    pending_doi_confirmation = models.BooleanField(default=False)
    consent_source = models.CharField(max_length=50, blank=True, default="")
    consent_at = models.DateTimeField(null=True, blank=True)
    consent_ip = models.GenericIPAddressField(null=True, blank=True)
    consent_user_agent = models.TextField(blank=True, default="")
    form_confirmed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["contact", "topic"], name="uniq_contact_topic")]
        indexes = [
            # the topics list's "pending DOI" column counts these per topic (few rows, a small index)
            models.Index(
                fields=["topic"],
                condition=models.Q(pending_doi_confirmation=True),
                name="contacttopic_pending",
            )
        ]


class Segment(models.Model):
    """DOM-09: `filters` = {"logic": "AND"|"OR", "conditions": [...]} in the AUT-34 condition language."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="segments")
    name = models.CharField(max_length=200)
    description = models.TextField(null=True, blank=True)
    filters = models.JSONField(default=dict)
    cached_count = models.PositiveIntegerField(default=0)
    cached_count_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return self.name


class BlockReason(models.TextChoices):
    BOUNCED = "bounced"
    COMPLAINED = "complained"
    MANUAL = "manual"
    UNENGAGED = "unengaged"


class BlockedEmail(models.Model):
    """DOM-10 suppression list; writers and upgrade rules in `owlat.suppression` (DLV-12)."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="blocked_emails")
    email = models.CharField(max_length=254)
    reason = models.CharField(max_length=12, choices=BlockReason.choices)
    bounce_type = models.CharField(
        max_length=4, null=True, blank=True, choices=[("hard", "hard"), ("soft", "soft")]
    )
    notes = models.TextField(null=True, blank=True)
    source_type = models.CharField(max_length=20, null=True, blank=True)
    source_id = models.CharField(max_length=64, null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name = "suppressed address"
        verbose_name_plural = "suppression list"
        constraints = [models.UniqueConstraint(fields=["organization", "email"], name="uniq_blocked_email")]

    def __str__(self) -> str:
        return f"{self.email} ({self.reason})"
