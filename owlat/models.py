"""The shared kernel's models (spec domain.md): tenancy, access, contacts, topics, segments, suppression,
activities, senders, settings, audit, customer webhooks, and the rows behind background work.

Every tenant row carries `organization` (DOM-01); uniqueness is per organization except the API key hash.
Identifiers that reach URLs, tokens or the API are UUIDs (D-03).
"""

from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models
from django.db.models import Q
from django_fsm import FSMField, FSMModelMixin, transition

from owlat.outbound import validate_outbound_url


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

    class Meta:
        constraints = [models.UniqueConstraint(fields=["user", "organization"], name="uniq_membership")]

    def __str__(self) -> str:
        return f"{self.user} @ {self.organization} ({self.role})"


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


class ContactSource(models.TextChoices):
    API = "api"
    IMPORT = "import"
    FORM = "form"
    TRANSACTIONAL = "transactional"
    INBOUND = "inbound"


class DoiStatus(models.TextChoices):
    NOT_REQUIRED = "not_required"
    PENDING = "pending"
    CONFIRMED = "confirmed"


class Contact(FSMModelMixin, models.Model):
    """DOM-05. `doi_status` is written only by `owlat.topics` (the DOI lifecycle)."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="contacts")
    email = models.CharField(max_length=254, null=True, blank=True)
    first_name = models.CharField(max_length=200, null=True, blank=True)
    last_name = models.CharField(max_length=200, null=True, blank=True)
    source = models.CharField(max_length=20, choices=ContactSource.choices, default=ContactSource.API)
    timezone = models.CharField(max_length=64, null=True, blank=True)
    language = models.CharField(max_length=16, null=True, blank=True)
    notes = models.TextField(null=True, blank=True)
    has_opened = models.BooleanField(default=False)
    has_clicked = models.BooleanField(default=False)
    soft_bounce_count = models.PositiveIntegerField(default=0)
    engagement_score = models.FloatField(null=True, blank=True)
    doi_status = FSMField(
        default=DoiStatus.NOT_REQUIRED, choices=DoiStatus.choices, protected=True, max_length=20
    )
    doi_confirmation_token = models.CharField(max_length=128, null=True, blank=True)
    doi_token_expires_at = models.DateTimeField(null=True, blank=True)
    doi_confirmed_at = models.DateTimeField(null=True, blank=True)
    doi_confirmation_source = models.CharField(max_length=100, null=True, blank=True)
    unsubscribed_at = models.DateTimeField(null=True, blank=True)
    deleted_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["organization", "email"],
                condition=Q(deleted_at__isnull=True, email__isnull=False),
                name="uniq_live_contact_email",
            )
        ]
        indexes = [models.Index(fields=["organization", "-created_at", "-id"], name="contact_org_created")]

    def __str__(self) -> str:
        return self.email or f"contact {self.pk}"

    # DOI lifecycle (DOM-08); bodies are pure, the writer is owlat.topics.
    @transition(field=doi_status, source=DoiStatus.NOT_REQUIRED, target=DoiStatus.PENDING)
    def start_doi(self, patch: dict) -> None:
        _apply_patch(self, patch)

    @transition(
        field=doi_status, source=[DoiStatus.PENDING, DoiStatus.NOT_REQUIRED], target=DoiStatus.CONFIRMED
    )
    def confirm_doi(self, patch: dict) -> None:
        _apply_patch(self, patch)


def _apply_patch(obj: models.Model, patch: dict) -> None:
    for key, value in patch.items():
        setattr(obj, key, value)


class IdentityChannel(models.TextChoices):
    EMAIL = "email"
    SMS = "sms"
    WHATSAPP = "whatsapp"
    PHONE = "phone"
    GENERIC = "generic"
    CHAT = "chat"


class ContactIdentity(models.Model):
    """DOM-06."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    organization = models.ForeignKey(Organization, on_delete=models.CASCADE)
    contact = models.ForeignKey(Contact, on_delete=models.CASCADE, related_name="identities")
    channel = models.CharField(max_length=10, choices=IdentityChannel.choices)
    identifier = models.CharField(max_length=254)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        verbose_name_plural = "contact identities"
        constraints = [
            models.UniqueConstraint(fields=["organization", "channel", "identifier"], name="uniq_identity")
        ]


class PropertyType(models.TextChoices):
    STRING = "string"
    NUMBER = "number"
    BOOLEAN = "boolean"
    DATE = "date"


class ContactProperty(models.Model):
    """DOM-07: a custom property definition."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    organization = models.ForeignKey(
        Organization, on_delete=models.CASCADE, related_name="contact_properties"
    )
    key = models.CharField(max_length=100)
    label = models.CharField(max_length=200, blank=True, default="")
    type = models.CharField(max_length=10, choices=PropertyType.choices, default=PropertyType.STRING)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        verbose_name_plural = "contact properties"
        constraints = [models.UniqueConstraint(fields=["organization", "key"], name="uniq_property_key")]

    def __str__(self) -> str:
        return self.key


class ContactPropertyValue(models.Model):
    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    organization = models.ForeignKey(Organization, on_delete=models.CASCADE)
    contact = models.ForeignKey(Contact, on_delete=models.CASCADE, related_name="property_values")
    property = models.ForeignKey(ContactProperty, on_delete=models.CASCADE, related_name="values")
    value = models.TextField(blank=True, default="")
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["contact", "property"], name="uniq_property_value")]


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


class ContactActivity(models.Model):
    """DOM-11 timeline rows."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    organization = models.ForeignKey(Organization, on_delete=models.CASCADE)
    contact = models.ForeignKey(Contact, on_delete=models.CASCADE, related_name="activities")
    activity_type = models.CharField(max_length=40)
    metadata = models.JSONField(default=dict, blank=True)
    occurred_at = models.DateTimeField(db_index=True)

    class Meta:
        verbose_name_plural = "contact activities"
        indexes = [models.Index(fields=["contact", "-occurred_at"], name="activity_contact_time")]


class Event(models.Model):
    """D-14: every event posted through the events API is stored."""

    id = models.CharField(primary_key=True, max_length=40, editable=False)  # evt_<base36 time><8 random>
    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="events")
    contact = models.ForeignKey(Contact, on_delete=models.CASCADE, related_name="events")
    event_name = models.CharField(max_length=100)
    properties = models.JSONField(null=True, blank=True)
    triggered_automations = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)


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


# --- Background work (D-05, D-15) ----------------------------------------------------------------------


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
