"""Sign-up forms: a hosted subscribe page and an embeddable form per organization, their fields and texts per
language, the submissions waiting for (or done with) their confirmation, and per-day counters.

A submission row holds an address only once it passed the bot defences; refused posts leave no row, only a count
in `SignupFormDay` (owlat.signup).
"""

from __future__ import annotations

import uuid

from django.core.validators import RegexValidator
from django.db import models

from owlat.models.audience import Topic
from owlat.models.contacts import Contact, ContactProperty
from owlat.models.organizations import Organization

_colour = RegexValidator(r"^#[0-9a-fA-F]{6}$", "A colour as #rrggbb, e.g. #4f46e5.")


class SignupForm(models.Model):
    """One form: its topics, fields and texts. Its public page is `/forms/<id>/`."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="signup_forms")
    name = models.CharField(
        max_length=200, help_text="Shown to you in the back-office; visitors never see it."
    )
    is_active = models.BooleanField(
        default=True,
        help_text="An inactive form answers its public page with “not found” and takes no sign-ups.",
    )
    require_double_opt_in = models.BooleanField(
        "always confirm by email",
        default=True,
        help_text="Every sign-up gets a confirmation mail and joins only after clicking its link — also for "
        "topics that do not require double opt-in. Addresses that unsubscribed or are suppressed always confirm.",
    )
    brand_color = models.CharField(
        "colour",
        max_length=7,
        default="#4f46e5",
        validators=[_colour],
        help_text="The colour of the hosted page's heading line and button (#rrggbb).",
    )
    title = models.CharField(max_length=200, default="Subscribe to our newsletter")
    description = models.TextField(blank=True, default="", help_text="A line or two under the title.")
    consent_text = models.TextField(
        blank=True,
        default="I agree to receive emails. I can unsubscribe at any time.",
        help_text="Shown above the button; plain text.",
    )
    submit_label = models.CharField("button label", max_length=60, default="Subscribe")
    success_message = models.TextField(
        default="Thank you! You are subscribed.",
        help_text="The answer when no confirmation is needed.",
    )
    pending_message = models.TextField(
        "“check your inbox” message",
        default="Almost done: we sent you an email. Click the link in it to confirm your subscription.",
        help_text="The answer when the sign-up waits for its confirmation.",
    )
    confirmed_message = models.TextField(
        default="Thank you! Your subscription is confirmed.",
        help_text="Shown after the confirmation link was clicked.",
    )
    success_redirect_url = models.URLField(
        blank=True, default="", help_text="Optional: send visitors here instead of showing the message."
    )
    pending_redirect_url = models.URLField(
        blank=True,
        default="",
        help_text="Optional: where visitors go after a sign-up that waits for its confirmation.",
    )
    confirmed_redirect_url = models.URLField(
        blank=True, default="", help_text="Optional: where the confirmation link leads once confirmed."
    )
    allowed_origins = models.TextField(
        blank=True,
        default="",
        help_text="The websites that may embed this form, one origin per line (https://www.example.com). "
        "Posts from other sites are refused; the hosted page always works.",
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name = "sign-up form"
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    def origins(self) -> list[str]:
        return [
            line.strip().rstrip("/").lower() for line in self.allowed_origins.splitlines() if line.strip()
        ]


class SignupFormTopic(models.Model):
    """A topic the form offers; several are shown as checkboxes, one alone as a fixed choice."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    organization = models.ForeignKey(Organization, on_delete=models.CASCADE)
    form = models.ForeignKey(SignupForm, on_delete=models.CASCADE, related_name="form_topics")
    topic = models.ForeignKey(Topic, on_delete=models.CASCADE, related_name="+")
    preselected = models.BooleanField("pre-ticked", default=True)
    position = models.PositiveSmallIntegerField(default=0)

    class Meta:
        verbose_name = "topic offered"
        verbose_name_plural = "topics offered"
        ordering = ["position", "id"]
        constraints = [models.UniqueConstraint(fields=["form", "topic"], name="uniq_signup_form_topic")]

    def __str__(self) -> str:
        return self.topic.name if self.topic_id else "topic"


class SignupFieldKind(models.TextChoices):
    FIRST_NAME = "first_name", "first name"
    LAST_NAME = "last_name", "last name"
    LANGUAGE = "language", "language"
    PROPERTY = "property", "contact property"


class SignupFormField(models.Model):
    """A field asked besides the email address (which is always asked, and required)."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    organization = models.ForeignKey(Organization, on_delete=models.CASCADE)
    form = models.ForeignKey(SignupForm, on_delete=models.CASCADE, related_name="fields")
    kind = models.CharField(max_length=12, choices=SignupFieldKind.choices)
    property = models.ForeignKey(
        ContactProperty,
        on_delete=models.CASCADE,
        null=True,
        blank=True,
        related_name="+",
        help_text="For a contact property: which one (its type decides the input).",
    )
    label = models.CharField(max_length=100, blank=True, default="", help_text="Empty: a label by kind.")
    required = models.BooleanField(default=False)
    position = models.PositiveSmallIntegerField(default=0)

    class Meta:
        verbose_name = "field asked"
        verbose_name_plural = "fields asked"
        ordering = ["position", "id"]

    def __str__(self) -> str:
        return self.label or self.get_kind_display()


class SignupFormText(models.Model):
    """The form's texts in one more language (chosen by `?lang=` or the browser's language)."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    organization = models.ForeignKey(Organization, on_delete=models.CASCADE)
    form = models.ForeignKey(SignupForm, on_delete=models.CASCADE, related_name="texts")
    language = models.CharField(max_length=16, help_text="A language code such as de or fr.")
    title = models.CharField(max_length=200, blank=True, default="")
    description = models.TextField(blank=True, default="")
    consent_text = models.TextField(blank=True, default="")
    submit_label = models.CharField("button label", max_length=60, blank=True, default="")
    success_message = models.TextField(blank=True, default="")
    pending_message = models.TextField("“check your inbox” message", blank=True, default="")
    confirmed_message = models.TextField(blank=True, default="")
    success_redirect_url = models.URLField(blank=True, default="")
    pending_redirect_url = models.URLField(blank=True, default="")

    class Meta:
        verbose_name = "translation"
        constraints = [models.UniqueConstraint(fields=["form", "language"], name="uniq_signup_form_text")]

    def __str__(self) -> str:
        return self.language


class SignupSubmission(models.Model):
    """A sign-up that passed the bot defences: the address and the values it asked for, held until its link is
    clicked (`confirmed_at`) or, without confirmation, joined at once. Nothing of it reaches the contact before."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    organization = models.ForeignKey(Organization, on_delete=models.CASCADE)
    form = models.ForeignKey(SignupForm, on_delete=models.CASCADE, related_name="submissions")
    email = models.CharField(max_length=254)
    values = models.JSONField(default=dict, blank=True)
    topic_ids = models.JSONField(default=list, blank=True)
    language = models.CharField(max_length=16, blank=True, default="")
    consent_ip = models.GenericIPAddressField(null=True, blank=True)
    consent_user_agent = models.CharField(max_length=500, blank=True, default="")
    confirmation_sent_at = models.DateTimeField(null=True, blank=True)
    confirmed_at = models.DateTimeField(null=True, blank=True)
    contact = models.ForeignKey(
        Contact, on_delete=models.SET_NULL, null=True, blank=True, related_name="signup_submissions"
    )
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        indexes = [models.Index(fields=["organization", "email", "-created_at"], name="signup_sub_email")]


class SignupFormDay(models.Model):
    """Per form and UTC day: posts received, sign-ups accepted, confirmations, and refusals by reason."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    organization = models.ForeignKey(Organization, on_delete=models.CASCADE)
    form = models.ForeignKey(SignupForm, on_delete=models.CASCADE, related_name="days")
    day = models.DateField()
    submissions = models.PositiveIntegerField(default=0)
    accepted = models.PositiveIntegerField(default=0)
    confirmations = models.PositiveIntegerField(default=0)
    refused_honeypot = models.PositiveIntegerField(default=0)
    refused_too_fast = models.PositiveIntegerField(default=0)
    refused_rate_limit = models.PositiveIntegerField(default=0)
    refused_origin = models.PositiveIntegerField(default=0)
    refused_invalid = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ["-day"]
        constraints = [models.UniqueConstraint(fields=["form", "day"], name="uniq_signup_form_day")]
