"""Tenancy and access (DOM-01…03, DOM-14, DOM-15): organizations, memberships, settings, API keys, audit log."""

from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models
from django_fsm import FSMField, FSMModelMixin, transition

from owlat.transitions import apply_patch


class Organization(models.Model):
    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    name = models.CharField(max_length=200)
    postal_address = models.TextField(
        blank=True, default="", help_text="Shown in the footer of campaign mail."
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class Role(models.TextChoices):
    OWNER = "owner"
    ADMIN = "admin"
    EDITOR = "editor"


class Membership(models.Model):
    """DOM-02: a user's role in one organization."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memberships")
    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="memberships")
    role = models.CharField(max_length=10, choices=Role.choices, default=Role.EDITOR)
    created_at = models.DateTimeField(auto_now_add=True)
    # when the member last chose this organization (switch or accepted invitation): where they land after login
    chosen_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["user", "organization"], name="uniq_membership")]

    def __str__(self) -> str:
        return f"{self.user} @ {self.organization} ({self.role})"


class InvitationStatus(models.TextChoices):
    PENDING = "pending"
    ACCEPTED = "accepted"
    DECLINED = "declined"


class Invitation(FSMModelMixin, models.Model):
    """An offer of membership (DOM-02) to whoever holds the account `invitee` names (a username or an email
    address, as the inviter typed it): nothing about that account changes until its holder accepts
    (owlat.invitations)."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="invitations")
    invitee = models.CharField(
        max_length=254,
        help_text="Username or email address of the person to invite. They get an email link when their address "
        "is known and see the invitation when they next sign in; nothing changes for them until they accept.",
    )
    role = models.CharField(max_length=10, choices=Role.choices, default=Role.EDITOR)
    status = FSMField(
        max_length=10, choices=InvitationStatus.choices, default=InvitationStatus.PENDING, protected=True
    )
    invited_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    accepted_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    responded_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["organization", "invitee"],
                condition=models.Q(status="pending"),
                name="uniq_pending_invitation",
            )
        ]

    def __str__(self) -> str:
        return f"{self.invitee} → {self.organization} ({self.role}, {self.status})"

    @transition(field=status, source=InvitationStatus.PENDING, target=InvitationStatus.ACCEPTED)
    def accept(self, patch: dict) -> None:
        apply_patch(self, patch)

    @transition(field=status, source=InvitationStatus.PENDING, target=InvitationStatus.DECLINED)
    def decline(self, patch: dict) -> None:
        apply_patch(self, patch)


class AbuseStatus(models.TextChoices):
    CLEAN = "clean"
    WARNED = "warned"
    SUSPENDED = "suspended"
    BANNED = "banned"


class OrganizationSettings(models.Model):
    """DOM-14: the former singleton, one row per organization."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    organization = models.OneToOneField(Organization, on_delete=models.CASCADE, related_name="settings")
    timezone = models.CharField(max_length=64, blank=True, default="")
    default_from_email = models.EmailField(blank=True, default="")
    default_from_name = models.CharField(max_length=200, blank=True, default="")
    is_custom_campaign_senders_allowed = models.BooleanField(default=False)
    feature_flags = models.JSONField(default=dict, blank=True)
    abuse_status = models.CharField(max_length=10, choices=AbuseStatus.choices, default=AbuseStatus.CLEAN)
    abuse_status_reason = models.TextField(blank=True, default="")
    abuse_status_changed_at = models.DateTimeField(null=True, blank=True)
    abuse_status_changed_by = models.CharField(max_length=100, blank=True, default="")
    daily_send_count = models.PositiveIntegerField(default=0)
    daily_send_count_reset_at = models.DateTimeField(null=True, blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name_plural = "organization settings"

    def __str__(self) -> str:
        return f"Settings of {self.organization}"

    @property
    def sending_blocked(self) -> bool:
        return self.abuse_status in (AbuseStatus.SUSPENDED, AbuseStatus.BANNED)


class ApiKey(models.Model):
    """DOM-03: `lm_live_` + 32 alphanumerics, stored as a SHA-256 hash, shown once."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="api_keys")
    name = models.CharField(max_length=200)
    key_hash = models.CharField(max_length=64, unique=True, editable=False)
    key_prefix = models.CharField(max_length=16, editable=False)
    scopes = models.JSONField(default=list)
    is_active = models.BooleanField(default=True)
    revoked_at = models.DateTimeField(null=True, blank=True)
    expires_at = models.DateTimeField(null=True, blank=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name = "API key"

    def __str__(self) -> str:
        return f"{self.name} ({self.key_prefix}…)"


class AuditLog(models.Model):
    """DOM-15; written in the same transaction as the change it describes (owlat.audit)."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="audit_logs")
    user_id = models.CharField(max_length=100)
    action = models.CharField(max_length=60, db_index=True)
    resource = models.CharField(max_length=40)
    resource_id = models.CharField(max_length=64, null=True, blank=True)
    details = models.JSONField(default=dict, blank=True)
    details_blob = models.TextField(null=True, blank=True)
    ip_address = models.GenericIPAddressField(null=True, blank=True)
    user_agent = models.TextField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        indexes = [models.Index(fields=["organization", "resource", "resource_id"], name="audit_resource")]

    def __str__(self) -> str:
        return f"{self.action} {self.resource}:{self.resource_id}"
