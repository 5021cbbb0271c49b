"""Email templates and transactional templates (spec DOM-13).

Each template row carries its organization (DOM-01). `status` is a protected django-fsm field written only by
`templates.lifecycle` (publish / unpublish); the transition bodies apply the patch they are given, nothing else.
"""

from __future__ import annotations

import uuid

from django.db import models
from django_fsm import FSMField, FSMModelMixin, transition

from owlat.models import Organization
from owlat.transitions import apply_patch


class TemplateStatus(models.TextChoices):
    DRAFT = "draft"
    PUBLISHED = "published"


class TemplateType(models.TextChoices):
    CAMPAIGN = "campaign"
    AUTOMATION = "automation"
    TRANSACTIONAL = "transactional"


class LanguageContentMixin(models.Model):
    """The language fields shared by both template kinds (DOM-13)."""

    default_language = models.CharField(max_length=16, default="en")
    supported_languages = models.JSONField(default=list, blank=True)
    translations = models.JSONField(
        default=dict, blank=True, help_text="Text overrides per language: {lang: {...}}."
    )
    html_translations = models.JSONField(
        default=dict,
        blank=True,
        help_text='Rendered content per language: {"de": {"htmlContent": "...", "subject": "..."}}.',
    )

    class Meta:
        abstract = True


class EmailTemplate(FSMModelMixin, LanguageContentMixin, models.Model):
    """DOM-13 email template used by campaigns and automation email steps."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="email_templates")
    name = models.CharField(max_length=200)
    subject = models.CharField(max_length=998)
    preview_text = models.CharField(max_length=500, null=True, blank=True)
    content = models.JSONField(
        null=True, blank=True, help_text="Editor JSON, stored verbatim, never rendered."
    )
    html_content = models.TextField(
        null=True, blank=True, help_text="The HTML that is sent; may use {{firstName}} style variables."
    )
    plain_text_content = models.TextField(null=True, blank=True)
    type = models.CharField(max_length=20, choices=TemplateType.choices, default=TemplateType.CAMPAIGN)
    status = FSMField(
        default=TemplateStatus.DRAFT, choices=TemplateStatus.choices, protected=True, max_length=20
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name"]
        indexes = [models.Index(fields=["organization", "status"], name="emailtemplate_org_status")]

    def __str__(self) -> str:
        return self.name

    @transition(field=status, source=TemplateStatus.DRAFT, target=TemplateStatus.PUBLISHED)
    def publish(self, patch: dict) -> None:
        apply_patch(self, patch)

    @transition(field=status, source=TemplateStatus.PUBLISHED, target=TemplateStatus.DRAFT)
    def unpublish(self, patch: dict) -> None:
        apply_patch(self, patch)


class TransactionalStatus(models.TextChoices):
    DRAFT = "draft"
    PUBLISHED = "published"
    PENDING_REVIEW = "pending_review"


class TransactionalEmail(FSMModelMixin, LanguageContentMixin, models.Model):
    """DOM-13 transactional template, addressed by `slug` (unique per organization) from the API (DLV-14)."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    organization = models.ForeignKey(
        Organization, on_delete=models.CASCADE, related_name="transactional_emails"
    )
    slug = models.SlugField(max_length=200)
    name = models.CharField(max_length=200)
    subject = models.CharField(max_length=998)
    html_content = models.TextField(null=True, blank=True)
    plain_text_content = models.TextField(null=True, blank=True)
    status = FSMField(
        default=TransactionalStatus.DRAFT, choices=TransactionalStatus.choices, protected=True, max_length=20
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["slug"]
        constraints = [
            models.UniqueConstraint(fields=["organization", "slug"], name="uniq_transactional_slug")
        ]

    def __str__(self) -> str:
        return self.slug

    @transition(
        field=status,
        source=[TransactionalStatus.DRAFT, TransactionalStatus.PENDING_REVIEW],
        target=TransactionalStatus.PUBLISHED,
    )
    def publish(self, patch: dict) -> None:
        apply_patch(self, patch)

    @transition(
        field=status,
        source=[TransactionalStatus.PUBLISHED, TransactionalStatus.PENDING_REVIEW],
        target=TransactionalStatus.DRAFT,
    )
    def unpublish(self, patch: dict) -> None:
        apply_patch(self, patch)

    @transition(field=status, source=TransactionalStatus.DRAFT, target=TransactionalStatus.PENDING_REVIEW)
    def submit_for_review(self, patch: dict) -> None:
        apply_patch(self, patch)


def _image_path(instance: TemplateImage, filename: str) -> str:
    return f"template-images/{instance.organization_id}/{filename}"


class TemplateImage(models.Model):
    """An image of an organization's library (templates.images): the upload decoded and re-encoded (`file`) and a
    copy resized for email width (`email_file`), stored through Django's storage API and served from SITE_URL."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="template_images")
    name = models.CharField(max_length=200)
    file = models.FileField(upload_to=_image_path, max_length=300)
    email_file = models.FileField(upload_to=_image_path, max_length=300)
    content_type = models.CharField(max_length=40)
    width = models.PositiveIntegerField()
    height = models.PositiveIntegerField()
    email_width = models.PositiveIntegerField()
    email_height = models.PositiveIntegerField()
    size_bytes = models.PositiveIntegerField()
    email_size_bytes = models.PositiveIntegerField()
    created_by = models.CharField(max_length=200, blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["organization", "-created_at"], name="templateimage_org_created")]

    def __str__(self) -> str:
        return self.name
