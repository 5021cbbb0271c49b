"""The agent's set-up per organization: its configuration (AGT-31), knowledge entries (AGT-16), circuit breakers
(AGT-20), model provider (AGT-28) and handling rules (AGT-17)."""

from __future__ import annotations

import secrets
import uuid
from typing import Any

from django.contrib.postgres.indexes import GinIndex
from django.contrib.postgres.search import SearchVector
from django.db import models
from django.db.models import Q

from owlat.models import Organization
from owlat.outbound import validate_outbound_url


def _inbound_secret() -> str:
    return "inb_" + secrets.token_urlsafe(24)


class AgentConfig(models.Model):
    """AGT-31: one row per organization. `inbound_secret` authenticates the raw RFC 5322 endpoint (AGT-02)."""

    organization = models.OneToOneField(Organization, on_delete=models.CASCADE, related_name="agent_config")
    is_auto_reply_enabled = models.BooleanField(default=False)
    confidence_threshold = models.FloatField(default=0.8)
    max_daily_auto_replies = models.PositiveIntegerField(default=100)
    daily_auto_reply_count = models.PositiveIntegerField(default=0)
    daily_auto_reply_reset_at = models.DateTimeField(null=True, blank=True)
    tone_description = models.TextField(null=True, blank=True)
    signature_template = models.TextField(null=True, blank=True)
    auto_send_delay_ms = models.PositiveIntegerField(default=60_000)
    human_approve_undo_delay_ms = models.PositiveIntegerField(default=15_000)
    is_clarification_enabled = models.BooleanField(
        default=False,
        help_text="Ask the mailbox owner before drafting when a reply needs facts only the owner knows "
        "(AGT-18; one more model call per message).",
    )
    clarification_timeout_ms = models.PositiveIntegerField(
        default=24 * 3600 * 1000,
        help_text="Unanswered questions time out after this long: the agent drafts its best guess, never auto-sent.",
    )
    is_shadow_mode = models.BooleanField(
        null=True, blank=True, help_text="Unset counts as on: auto decisions are logged, not sent."
    )
    coalesce_window_ms = models.PositiveIntegerField(
        default=0,
        help_text="Burst coalescing: wait this long before processing; quick follow-ups on the same thread "
        "replace the waiting message, so a burst gets one reply (0 = off).",
    )
    is_working_hours_enabled = models.BooleanField(default=False)
    working_hours_timezone = models.CharField(max_length=64, default="UTC")
    working_hours_start_minute = models.PositiveSmallIntegerField(default=9 * 60)
    working_hours_end_minute = models.PositiveSmallIntegerField(default=17 * 60)
    working_days = models.JSONField(default=list, blank=True, help_text="ISO weekdays, 1 = Monday")
    auto_send_blocked_phrases = models.TextField(
        blank=True,
        default="",
        help_text="One phrase per line: a draft containing one (case-insensitive) is never sent automatically, "
        "it goes to human review. Promises of refunds, money, credentials and account changes are always blocked.",
    )
    inbound_secret = models.CharField(max_length=64, unique=True, default=_inbound_secret)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name = "agent configuration"

    def __str__(self) -> str:
        return f"agent configuration of {self.organization_id}"

    @property
    def shadow_mode(self) -> bool:
        return self.is_shadow_mode is not False

    @property
    def weekdays(self) -> list[int]:
        return list(self.working_days or [1, 2, 3, 4, 5])


class KnowledgeEntry(models.Model):
    """AGT-16 knowledge for context retrieval (PostgreSQL full-text search, plain fallback on SQLite).
    `is_internal` entries reach only drafts that cannot be auto-sent (inbox.steps.context, inbox.steps.route)."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    organization = models.ForeignKey(Organization, on_delete=models.CASCADE)
    title = models.CharField(max_length=300)
    content = models.TextField()
    source = models.CharField(max_length=500, blank=True, default="")
    is_internal = models.BooleanField(
        "internal (staff only)",
        default=False,
        help_text="Facts for your team, not for customers (escalation rules, account notes, internal prices). "
        "Used only in drafts that a person reviews: never in a reply that can be sent automatically.",
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name_plural = "knowledge entries"
        # the full-text document of `inbox.knowledge.knowledge_search` (AGT-16): its `@@` reads this index
        indexes = [
            GinIndex(
                SearchVector("title", weight="A", config="simple")
                + SearchVector("content", weight="B", config="simple"),
                name="knowledge_search",
            )
        ]
        constraints = [
            models.UniqueConstraint(
                fields=["organization", "source"], condition=~Q(source=""), name="uniq_knowledge_source"
            )
        ]

    def __str__(self) -> str:
        return self.title


class BreakerKind(models.TextChoices):
    """AGT-20: the agent circuit breakers."""

    LLM_FAILURE = "llm_failure", "model calls failing"
    CONFIDENCE_DEGRADATION = "confidence_degradation", "draft quality degrading"
    REJECTION_SPIKE = "rejection_spike", "drafts rejected by reviewers"


class CircuitBreaker(models.Model):
    """AGT-20: one row per organization and kind, written only by `inbox.breakers`. Open while `opened_at` is set
    and `closes_at` is in the future; `samples` keeps the recent observations the trip rule looks at."""

    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="circuit_breakers")
    kind = models.CharField(max_length=24, choices=BreakerKind.choices)
    opened_at = models.DateTimeField(null=True, blank=True)
    closes_at = models.DateTimeField(null=True, blank=True)
    reason = models.CharField(max_length=300, blank=True, default="")
    trip_count = models.PositiveIntegerField(default=0)
    samples = models.JSONField(default=list, blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["organization", "kind"], name="uniq_breaker_kind")]
        indexes = [models.Index(fields=["closes_at"], name="breaker_closes_at")]

    def __str__(self) -> str:
        return f"{self.kind} breaker"

    def is_open(self, now: Any = None) -> bool:
        from django.utils import timezone

        now = now or timezone.now()
        return self.opened_at is not None and (self.closes_at is None or now < self.closes_at)


class LlmProvider(models.TextChoices):
    OPENAI = "openai", "OpenAI"
    OPENROUTER = "openrouter", "OpenRouter"
    OLLAMA = "ollama", "Ollama (no key)"


class LlmProviderSetting(models.Model):
    """AGT-28 [orig]: an organization's own model provider, set in the admin; overrides the environment's for
    that organization's model calls. The key is stored encrypted (`inbox.provider_settings`); the base URL is
    tenant-entered, so it passes the outbound-HTTP guard at save time and at connect time."""

    organization = models.OneToOneField(Organization, on_delete=models.CASCADE, related_name="llm_provider")
    provider = models.CharField(max_length=16, choices=LlmProvider.choices, default=LlmProvider.OPENAI)
    base_url = models.URLField(
        max_length=500,
        blank=True,
        validators=[validate_outbound_url],
        default="",
        help_text="Any OpenAI-compatible endpoint (e.g. https://openrouter.ai/api/v1). Empty: the provider's own.",
    )
    api_key_encrypted = models.TextField(blank=True, default="", editable=False)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name = "model provider"

    def __str__(self) -> str:
        return f"{self.get_provider_display()} for {self.organization_id}"


class RuleMatch(models.TextChoices):
    SENDER = "sender", "sender address is"
    SENDER_DOMAIN = "sender_domain", "sender domain is"
    SUBJECT = "subject", "subject contains"
    CATEGORY = "category", "classified category is"


class RuleAction(models.TextChoices):
    ARCHIVE = "archive", "archive without reply"
    RELABEL = "relabel", "relabel the category"


class HandlingRule(models.Model):
    """AGT-17 [orig]: an operator's rule applied after classification — force-archive (`handling_rule_archive`)
    or relabel the category. Complaints, spam and urgent messages are never relabelled. `uid` is its id on the
    API (D-03: no sequential integers in URLs)."""

    uid = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="handling_rules")
    name = models.CharField(max_length=200)
    match = models.CharField(max_length=16, choices=RuleMatch.choices)
    value = models.CharField(
        max_length=300,
        help_text="Address, domain, words of the subject, or a category name (case-insensitive).",
    )
    action = models.CharField(max_length=10, choices=RuleAction.choices)
    category = models.CharField(
        max_length=20,
        blank=True,
        default="",
        choices=[
            (c, c.replace("_", " "))
            for c in ("support", "sales", "billing", "feature_request", "internal", "other")
        ],
        help_text="The new category (relabel only).",
    )
    position = models.PositiveSmallIntegerField(
        default=0, help_text="Rules run in this order; the first match wins."
    )
    is_active = models.BooleanField(default=True)

    class Meta:
        ordering = ["position", "name"]

    def __str__(self) -> str:
        return self.name
