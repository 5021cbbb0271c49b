"""Wire format of the inbox agent's configuration: the agent configuration (AGT-31 with AGT-18's clarify switch and
AGT-02's coalescing window), handling rules (AGT-17), the organization's model provider (AGT-28; the key is
write-only) and the circuit breakers (AGT-20). Declared camelCase fields; the range and consistency rules are
`inbox.configuration`'s (one implementation for the admin and the API), reported on the camelCase field."""

from __future__ import annotations

from typing import Any

from django.core.validators import RegexValidator
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from inbox.configuration import (
    MAX_DAILY_AUTO_REPLIES,
    MAX_DELAY_MS,
    MAX_RULE_POSITION,
    MAX_UNDO_DELAY_MS,
    MINUTES_PER_DAY,
    RELABEL_CATEGORIES,
)
from inbox.llm import call_timeout
from inbox.models import BreakerKind, LlmProvider, RuleAction, RuleMatch
from owlat.api.fields import (
    InputSerializer,
    StrictBooleanField,
    StrictIntegerField,
    StringField,
    TimestampField,
)
from owlat.api.serializers import TIMEZONE_MESSAGE, TimezoneField


class StrictNumberField(serializers.FloatField):
    """A JSON number (not a string, not a boolean); its range (`min_value`, `max_value`, documented) is checked by
    `inbox.configuration` with the spec's message."""

    def to_internal_value(self, data: Any) -> float:
        if (
            isinstance(data, bool)
            or not isinstance(data, int | float)
            or data != data
            or data
            in (
                float("inf"),
                float("-inf"),
            )
        ):
            raise serializers.ValidationError(f"{self.field_name} must be a number")
        return float(data)

    def run_validators(self, value: Any) -> None:
        return None


def _ms(source: str, help_text: str, max_value: int = MAX_DELAY_MS) -> StrictIntegerField:
    return StrictIntegerField(
        source=source, required=False, min_value=0, max_value=max_value, help_text=help_text
    )


#: base URLs the API takes (the outbound guard then refuses hosts that are not public): http(s), a host name with
#: a top-level domain, an optional port, a path without spaces (a subset of what Django's URL validator accepts)
BASE_URL_PATTERN = (
    r"^[Hh][Tt][Tt][Pp][Ss]?://(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.)+[A-Za-z]{2,63}"
    r"(?::(?:6553[0-5]|655[0-2][0-9]|65[0-4][0-9]{2}|6[0-4][0-9]{3}|[1-5][0-9]{4}|[1-9][0-9]{0,3}))?"
    r"(?:/[!-~]*)?$"
)
WORKING_HOURS_HELP = "Minutes after midnight, 0 to 1440; the working day ends after it starts."


# --- agent configuration --------------------------------------------------------------------------------------


class AgentConfigSerializer(serializers.Serializer):
    """The organization's agent configuration (AGT-31)."""

    isAutoReplyEnabled = serializers.BooleanField(source="is_auto_reply_enabled")
    isShadowMode = serializers.BooleanField(
        source="shadow_mode", help_text="On: automatic decisions are logged as 'would have sent', not sent."
    )
    confidenceThreshold = serializers.FloatField(source="confidence_threshold")
    maxDailyAutoReplies = serializers.IntegerField(source="max_daily_auto_replies")
    dailyAutoReplyCount = serializers.IntegerField(source="daily_auto_reply_count")
    dailyAutoReplyResetAt = TimestampField(source="daily_auto_reply_reset_at", allow_null=True)
    toneDescription = serializers.CharField(source="tone_description", allow_null=True)
    signatureTemplate = serializers.CharField(source="signature_template", allow_null=True)
    autoSendDelayMs = serializers.IntegerField(source="auto_send_delay_ms")
    humanApproveUndoDelayMs = serializers.IntegerField(source="human_approve_undo_delay_ms")
    coalesceWindowMs = serializers.IntegerField(
        source="coalesce_window_ms", help_text="Burst coalescing window (0 = off)."
    )
    isClarificationEnabled = serializers.BooleanField(
        source="is_clarification_enabled",
        help_text="The clarify step (AGT-18) runs between classify and draft.",
    )
    clarificationTimeoutMs = serializers.IntegerField(source="clarification_timeout_ms")
    isWorkingHoursEnabled = serializers.BooleanField(source="is_working_hours_enabled")
    workingHoursTimezone = serializers.CharField(source="working_hours_timezone")
    workingHoursStartMinute = serializers.IntegerField(source="working_hours_start_minute")
    workingHoursEndMinute = serializers.IntegerField(source="working_hours_end_minute")
    workingDays = serializers.ListField(
        source="weekdays", child=serializers.IntegerField(), help_text="ISO weekdays, 1 = Monday."
    )
    autoSendBlockedPhrases = serializers.CharField(
        source="auto_send_blocked_phrases",
        help_text="One phrase per line; a draft containing one is never sent automatically.",
    )
    updatedAt = TimestampField(source="updated_at", allow_null=True)


class AgentConfigWriteSerializer(InputSerializer):
    """Only the keys sent change. Turning auto-reply off cancels pending automatic sends."""

    read_only_keys = ("dailyAutoReplyCount", "dailyAutoReplyResetAt", "updatedAt")

    isAutoReplyEnabled = StrictBooleanField(source="is_auto_reply_enabled", required=False)
    isShadowMode = StrictBooleanField(source="is_shadow_mode", required=False)
    confidenceThreshold = StrictNumberField(
        source="confidence_threshold",
        required=False,
        min_value=0,
        max_value=1,
        help_text="Draft quality needed to auto-send, 0 to 1.",
    )
    maxDailyAutoReplies = StrictIntegerField(
        source="max_daily_auto_replies", required=False, min_value=0, max_value=MAX_DAILY_AUTO_REPLIES
    )
    toneDescription = StringField(source="tone_description", required=False, allow_null=True, max_length=5000)
    autoSendBlockedPhrases = StringField(
        source="auto_send_blocked_phrases",
        required=False,
        allow_blank=True,
        max_length=20000,
        help_text="One phrase per line; a draft containing one is never sent automatically.",
    )
    signatureTemplate = StringField(
        source="signature_template", required=False, allow_null=True, max_length=5000
    )
    autoSendDelayMs = _ms("auto_send_delay_ms", "Undo window of automatic approvals, up to 24 hours.")
    humanApproveUndoDelayMs = _ms(
        "human_approve_undo_delay_ms", "Undo window of human approvals, 0 to 120000.", MAX_UNDO_DELAY_MS
    )
    coalesceWindowMs = _ms("coalesce_window_ms", "Burst coalescing window (0 = off), up to 24 hours.")
    isClarificationEnabled = StrictBooleanField(source="is_clarification_enabled", required=False)
    clarificationTimeoutMs = _ms(
        "clarification_timeout_ms", "Unanswered questions time out after this long, up to 24 hours."
    )
    isWorkingHoursEnabled = StrictBooleanField(source="is_working_hours_enabled", required=False)
    workingHoursTimezone = TimezoneField(
        source="working_hours_timezone",
        required=False,
        allow_blank=False,
        error_messages={"blank": TIMEZONE_MESSAGE.replace("timezone", "workingHoursTimezone", 1)},
        help_text="An IANA time zone name, e.g. Europe/Berlin.",
    )
    workingHoursStartMinute = StrictIntegerField(
        source="working_hours_start_minute",
        required=False,
        min_value=0,
        max_value=MINUTES_PER_DAY,
        help_text=WORKING_HOURS_HELP,
    )
    workingHoursEndMinute = StrictIntegerField(
        source="working_hours_end_minute",
        required=False,
        min_value=0,
        max_value=MINUTES_PER_DAY,
        help_text=WORKING_HOURS_HELP,
    )
    workingDays = serializers.ListField(
        source="working_days",
        child=StrictIntegerField(min_value=1, max_value=7),
        required=False,
        max_length=7,
        help_text="ISO weekdays, 1 = Monday.",
    )


# --- handling rules -------------------------------------------------------------------------------------------


class HandlingRuleSerializer(serializers.Serializer):
    """An operator rule applied after classification: archive, or relabel the category (never a complaint,
    spam or an urgent message)."""

    id = serializers.CharField(source="uid")
    name = serializers.CharField()
    match = serializers.ChoiceField(choices=RuleMatch.choices)
    value = serializers.CharField()
    action = serializers.ChoiceField(choices=RuleAction.choices)
    category = serializers.SerializerMethodField(
        help_text="The new category (relabel rules); null otherwise."
    )
    position = serializers.IntegerField(help_text="Rules run in this order; the first match wins.")
    isActive = serializers.BooleanField(source="is_active")

    @extend_schema_field(serializers.ChoiceField(choices=RELABEL_CATEGORIES, allow_null=True))
    def get_category(self, rule: Any) -> str | None:
        return rule.category or None


class HandlingRuleWriteSerializer(InputSerializer):
    read_only_keys = ("id",)

    name = StringField(trim_whitespace=True, max_length=200, schema_non_blank=True)
    match = serializers.ChoiceField(choices=RuleMatch.values)
    value = StringField(
        trim_whitespace=True,
        max_length=300,
        schema_non_blank=True,
        help_text="Address, domain, subject words or category.",
    )
    action = serializers.ChoiceField(choices=RuleAction.values)
    category = serializers.ChoiceField(
        choices=RELABEL_CATEGORIES, required=False, allow_null=True, help_text="Required for relabel rules."
    )
    position = StrictIntegerField(required=False, min_value=0, max_value=MAX_RULE_POSITION)
    isActive = StrictBooleanField(source="is_active", required=False)


# --- model provider -------------------------------------------------------------------------------------------


class ModelRoutingSerializer(serializers.Serializer):
    """The model each task uses (system-wide, AGT-29: set in the server's environment, not per organization)."""

    classify = serializers.CharField()
    extract = serializers.CharField()
    guard = serializers.CharField()
    summarize = serializers.CharField()
    draft = serializers.CharField()
    plan = serializers.CharField()


class ModelProviderSerializer(serializers.Serializer):
    """Where the organization's model calls go. The API key is never returned."""

    source = serializers.ChoiceField(
        choices=["organization", "environment"],
        help_text="`organization`: its own setting; `environment`: the server's.",
    )
    provider = serializers.ChoiceField(choices=LlmProvider.values, allow_null=True)
    baseUrl = serializers.CharField(
        allow_null=True, help_text="The organization's own base URL (null: the provider's, or the server's)."
    )
    isApiKeySet = serializers.BooleanField(help_text="A key is stored (encrypted); it is never shown.")
    isConfigured = serializers.BooleanField(
        help_text="Model calls can be made: a provider and, unless Ollama, a key."
    )
    models = ModelRoutingSerializer()
    timeoutSeconds = serializers.FloatField(help_text="Per call (system-wide).")
    updatedAt = TimestampField(allow_null=True)


class ModelProviderWriteSerializer(InputSerializer):
    """Only the keys sent change; `provider` is needed when the organization has no setting yet."""

    read_only_keys = ("source", "isApiKeySet", "isConfigured", "models", "timeoutSeconds", "updatedAt")

    provider = serializers.ChoiceField(choices=LlmProvider.values, required=False)
    baseUrl = StringField(
        required=False,
        max_length=500,
        validators=[RegexValidator(BASE_URL_PATTERN, "Enter a valid URL.")],
        help_text="Any OpenAI-compatible endpoint on a public host; empty: the provider's own.",
    )
    apiKey = StringField(
        required=False,
        write_only=True,
        trim_whitespace=True,
        allow_blank=False,
        max_length=500,
        help_text="Stored encrypted, never returned. Absent: the stored key is kept.",
    )
    clearApiKey = StrictBooleanField(required=False, help_text="Remove the stored key.")

    def validate(self, data: dict[str, Any]) -> dict[str, Any]:
        if data.get("apiKey") and data.get("clearApiKey"):
            raise serializers.ValidationError({"clearApiKey": ["Send apiKey or clearApiKey, not both."]})
        return data


def model_provider_data(organization_id: Any) -> dict[str, Any]:
    """The provider the organization's calls use, for `ModelProviderSerializer`."""
    from inbox.llm import CAPABLE_TASKS, FAST_TASKS, model_for
    from inbox.models import LlmProviderSetting
    from inbox.provider_settings import environment_provider

    row = LlmProviderSetting.objects.filter(organization_id=organization_id).first()
    routing = {task: model_for(task) for task in sorted(FAST_TASKS | CAPABLE_TASKS)}
    common = {"models": routing, "timeoutSeconds": call_timeout()}
    if row is not None:
        return {
            "source": "organization",
            "provider": row.provider,
            "baseUrl": row.base_url or None,
            "isApiKeySet": bool(row.api_key_encrypted),
            "isConfigured": bool(row.api_key_encrypted) or row.provider == LlmProvider.OLLAMA,
            "updatedAt": row.updated_at,
            **common,
        }
    env = environment_provider()
    return {
        "source": "environment",
        "provider": env.provider or None,
        "baseUrl": None,  # the server's own endpoint is not shown to API keys
        "isApiKeySet": bool(env.api_key),
        "isConfigured": env.usable,
        "updatedAt": None,
        **common,
    }


# --- circuit breakers -----------------------------------------------------------------------------------------


class CircuitBreakerSerializer(serializers.Serializer):
    """While a breaker is open no draft is sent automatically; every message goes to human review."""

    kind = serializers.ChoiceField(choices=BreakerKind.choices)
    state = serializers.SerializerMethodField()
    reason = serializers.SerializerMethodField()
    openedAt = TimestampField(source="opened_at", allow_null=True)
    closesAt = TimestampField(
        source="closes_at",
        allow_null=True,
        help_text="It closes by itself then (half-open: one more bad observation trips it again).",
    )
    tripCount = serializers.IntegerField(source="trip_count")

    @extend_schema_field(serializers.ChoiceField(choices=["open", "closed"]))
    def get_state(self, breaker: Any) -> str:
        return "open" if breaker.is_open() else "closed"

    @extend_schema_field(serializers.CharField(allow_null=True, help_text="Why it opened (while open)."))
    def get_reason(self, breaker: Any) -> str | None:
        return (breaker.reason or None) if breaker.is_open() else None


class CircuitBreakerCloseSerializer(serializers.Serializer):
    kind = serializers.ChoiceField(choices=BreakerKind.values, help_text="The breaker to close.")
