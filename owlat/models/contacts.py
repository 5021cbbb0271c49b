"""Contacts (DOM-05…07, DOM-11, D-14): the contact row with its DOI lifecycle, identities, custom properties,
timeline activities and stored events."""

from __future__ import annotations

import uuid

from django.db import models
from django.db.models import Q
from django_fsm import FSMField, FSMModelMixin, transition

from owlat.models.organizations import Organization
from owlat.transitions import apply_patch


class ContactSource(models.TextChoices):
    API = "api"
    IMPORT = "import"
    FORM = "form"
    TRANSACTIONAL = "transactional"
    INBOUND = "inbound"
    ADMIN = "admin"  # [project] created by an operator in the back-office


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
        apply_patch(self, patch)

    @transition(
        field=doi_status, source=[DoiStatus.PENDING, DoiStatus.NOT_REQUIRED], target=DoiStatus.CONFIRMED
    )
    def confirm_doi(self, patch: dict) -> None:
        apply_patch(self, patch)


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
