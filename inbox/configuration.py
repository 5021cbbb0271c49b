"""Writes of the inbox agent's configuration (AGT-17 rules, AGT-18 clarify, AGT-20 breakers, AGT-28 provider,
AGT-31 agent configuration): one place holds each rule, the admin forms and the API views both call it.

Validators return `{model field: message}` (empty when valid) so a form adds them to its fields and the API names
the camelCase field; the `*_update`/`*_save`/`*_delete` functions re-check, write, write the audit row and run
the write's effects (auto-reply off cancels pending autonomous sends; a provider change drops the cached
resolution). The provider's API key is accepted in plain text, stored encrypted and never returned.
"""

from __future__ import annotations

import zoneinfo
from typing import Any

from django.core.exceptions import ValidationError
from django.db import transaction

from inbox.models import AgentConfig, HandlingRule, LlmProvider, LlmProviderSetting, RuleAction, RuleMatch
from owlat.audit import audit_write


class ConfigInvalid(ValueError):
    """A write refused by a validator: `errors` maps model field names to messages."""

    def __init__(self, errors: dict[str, str]) -> None:
        super().__init__("; ".join(f"{k}: {v}" for k, v in errors.items()))
        self.errors = errors


# --- agent configuration (AGT-31, AGT-18, AGT-02 coalescing) ---------------------------------------------

#: the fields an operator edits (the counters and the inbound secret are not among them)
AGENT_CONFIG_FIELDS = (
    "is_auto_reply_enabled",
    "is_shadow_mode",
    "confidence_threshold",
    "max_daily_auto_replies",
    "tone_description",
    "signature_template",
    "auto_send_delay_ms",
    "human_approve_undo_delay_ms",
    "coalesce_window_ms",
    "is_clarification_enabled",
    "clarification_timeout_ms",
    "is_working_hours_enabled",
    "working_hours_timezone",
    "working_hours_start_minute",
    "working_hours_end_minute",
    "working_days",
    "auto_send_blocked_phrases",
)
MAX_UNDO_DELAY_MS = 120_000  # AGT-26: human approvals wait 0–120 000 ms
MAX_DELAY_MS = 24 * 3600 * 1000
MINUTES_PER_DAY = 24 * 60
MAX_DAILY_AUTO_REPLIES = 1_000_000
MAX_RULE_POSITION = 32767  # a PositiveSmallIntegerField


def agent_config_errors(values: dict[str, Any]) -> dict[str, str]:
    """The AGT-31 rules over a (partial) set of agent configuration values."""
    errors: dict[str, str] = {}
    threshold = values.get("confidence_threshold")
    if threshold is not None and not 0 <= threshold <= 1:
        errors["confidence_threshold"] = "Between 0 and 1."
    daily = values.get("max_daily_auto_replies")
    if daily is not None and not 0 <= daily <= MAX_DAILY_AUTO_REPLIES:
        errors["max_daily_auto_replies"] = f"Between 0 and {MAX_DAILY_AUTO_REPLIES}."
    undo = values.get("human_approve_undo_delay_ms")
    if undo is not None and not 0 <= undo <= MAX_UNDO_DELAY_MS:
        errors["human_approve_undo_delay_ms"] = f"Between 0 and {MAX_UNDO_DELAY_MS} ms."
    for name in ("auto_send_delay_ms", "coalesce_window_ms", "clarification_timeout_ms"):
        value = values.get(name)
        if value is not None and not 0 <= value <= MAX_DELAY_MS:
            errors[name] = f"Between 0 and {MAX_DELAY_MS} ms (24 hours)."
    zone = values.get("working_hours_timezone")
    if zone is not None:
        try:
            zoneinfo.ZoneInfo(zone)
        except (zoneinfo.ZoneInfoNotFoundError, ValueError):
            errors["working_hours_timezone"] = "Enter an IANA time zone name such as Europe/Berlin."
    for name in ("working_hours_start_minute", "working_hours_end_minute"):
        value = values.get(name)
        if value is not None and not 0 <= value <= MINUTES_PER_DAY:
            errors[name] = f"Minutes after midnight, 0 to {MINUTES_PER_DAY}."
    start, end = values.get("working_hours_start_minute"), values.get("working_hours_end_minute")
    if start is not None and end is not None and "working_hours_end_minute" not in errors and end <= start:
        errors["working_hours_end_minute"] = "The working day ends after it starts."
    days = values.get("working_days")
    if days is not None and (
        not isinstance(days, list) or any(isinstance(d, bool) or d not in range(1, 8) for d in days)
    ):
        errors["working_days"] = "ISO weekdays: 1 (Monday) to 7 (Sunday)."
    return errors


def agent_config_get(organization_id: Any) -> AgentConfig:
    config, _ = AgentConfig.objects.get_or_create(organization_id=organization_id)
    return config


def agent_config_update(
    *, organization_id: Any, changes: dict[str, Any], actor: str
) -> tuple[AgentConfig, int]:
    """Apply `changes` (model field names) to the organization's agent configuration. Returns the row and how
    many pending autonomous sends were cancelled (auto-reply switched off, AGT-26 `kill_switch`)."""
    from inbox.review import auto_sends_cancel_all

    unknown = set(changes) - set(AGENT_CONFIG_FIELDS)
    if unknown:
        raise ConfigInvalid(dict.fromkeys(sorted(unknown), "Not an editable setting."))
    with transaction.atomic():
        agent_config_get(organization_id)
        config = AgentConfig.objects.select_for_update().get(organization_id=organization_id)
        merged = {name: getattr(config, name) for name in AGENT_CONFIG_FIELDS} | changes
        errors = agent_config_errors(merged)
        if errors:
            raise ConfigInvalid(errors)
        was_enabled = config.is_auto_reply_enabled
        changed = {name: value for name, value in changes.items() if getattr(config, name) != value}
        if "working_days" in changed:
            changed["working_days"] = sorted(changed["working_days"])
        for name, value in changed.items():
            setattr(config, name, value)
        config.save()
        if changed:
            audit_write(
                organization_id=organization_id,
                actor=actor,
                action="inbox.agent_config_updated",
                resource="agent_config",
                resource_id=str(config.pk),
                details={"changed": sorted(changed)},
            )
        cancelled = 0
        if was_enabled and not config.is_auto_reply_enabled:
            cancelled = auto_sends_cancel_all(organization_id=organization_id, actor=actor)
    return config, cancelled


def inbound_secret_rotate(*, organization_id: Any, actor: str) -> str:
    """A new inbound secret for the raw endpoint; the old one stops working at once. Audited (not the secret)."""
    from inbox.models.agent import _inbound_secret

    with transaction.atomic():
        agent_config_get(organization_id)
        config = AgentConfig.objects.select_for_update().get(organization_id=organization_id)
        config.inbound_secret = _inbound_secret()
        config.save(update_fields=["inbound_secret", "updated_at"])
        audit_write(
            organization_id=organization_id,
            actor=actor,
            action="inbox.inbound_secret_rotated",
            resource="agent_config",
            resource_id=str(config.pk),
            details={},
        )
    return config.inbound_secret


def inbound_secret_hint(secret: str) -> str:
    """The secret as anyone may see it: its prefix and last four characters."""
    return f"{secret[:4]}…{secret[-4:]}" if len(secret) > 12 else "…"


# --- handling rules (AGT-17 [orig]) ------------------------------------------------------------------------

RULE_FIELDS = ("name", "match", "value", "action", "category", "position", "is_active")
RELABEL_CATEGORIES = tuple(c for c, _ in HandlingRule._meta.get_field("category").choices)


def handling_rule_errors(values: dict[str, Any]) -> dict[str, str]:
    """A whole rule's values: what to match, what to do, and the category exactly when relabelling."""
    errors: dict[str, str] = {}
    if not (values.get("name") or "").strip():
        errors["name"] = "Name the rule."
    if values.get("match") not in RuleMatch.values:
        errors["match"] = f"One of: {', '.join(RuleMatch.values)}."
    if not (values.get("value") or "").strip():
        errors["value"] = "Enter what to match: an address, a domain, words of the subject or a category."
    action, category = values.get("action"), values.get("category") or ""
    if action not in RuleAction.values:
        errors["action"] = f"One of: {', '.join(RuleAction.values)}."
    elif action == RuleAction.RELABEL and not category:
        errors["category"] = "Pick the category to relabel to."
    elif action == RuleAction.ARCHIVE and category:
        errors["category"] = "Leave the category empty for an archive rule."
    position = values.get("position", 0)
    if isinstance(position, bool) or not isinstance(position, int) or not 0 <= position <= MAX_RULE_POSITION:
        errors["position"] = f"A whole number from 0 to {MAX_RULE_POSITION}."
    if category and category not in RELABEL_CATEGORIES:
        errors["category"] = (
            f"One of: {', '.join(RELABEL_CATEGORIES)} (complaint, spam and urgent mail are never relabelled)."
        )
    return errors


def _rule_audit(rule: HandlingRule, action: str, actor: str) -> None:
    audit_write(
        organization_id=rule.organization_id,
        actor=actor,
        action=action,
        resource="handling_rule",
        resource_id=str(rule.uid),
        details={"name": rule.name, "match": rule.match, "action": rule.action},
    )


def handling_rule_create(*, organization_id: Any, values: dict[str, Any], actor: str) -> HandlingRule:
    values = {"category": "", "position": 0, "is_active": True, **values}
    errors = handling_rule_errors(values)
    if errors:
        raise ConfigInvalid(errors)
    with transaction.atomic():
        rule = HandlingRule.objects.create(
            organization_id=organization_id, **{k: values[k] for k in RULE_FIELDS}
        )
        _rule_audit(rule, "inbox.handling_rule_created", actor)
    return rule


def handling_rule_update(*, rule: HandlingRule, changes: dict[str, Any], actor: str) -> HandlingRule:
    merged = {name: getattr(rule, name) for name in RULE_FIELDS} | changes
    if changes.get("action") == RuleAction.ARCHIVE and "category" not in changes:
        merged["category"] = ""  # switching to archive drops the relabel target
    errors = handling_rule_errors(merged)
    if errors:
        raise ConfigInvalid(errors)
    with transaction.atomic():
        for name in RULE_FIELDS:
            setattr(rule, name, merged[name])
        rule.save()
        _rule_audit(rule, "inbox.handling_rule_updated", actor)
    return rule


def handling_rule_delete(*, rule: HandlingRule, actor: str) -> None:
    with transaction.atomic():
        _rule_audit(rule, "inbox.handling_rule_deleted", actor)
        rule.delete()


# --- the organization's model provider (AGT-28 [orig]) ----------------------------------------------------


def provider_setting_errors(*, provider: str | None, base_url: str, has_key: bool) -> dict[str, str]:
    """A provider to use, a base URL the outbound-HTTP guard allows, and a key unless the provider is Ollama."""
    from owlat.outbound import validate_outbound_url

    errors: dict[str, str] = {}
    if provider not in LlmProvider.values:
        errors["provider"] = f"One of: {', '.join(LlmProvider.values)}."
    if base_url:
        try:
            validate_outbound_url(base_url)
        except ValidationError as exc:
            errors["base_url"] = " ".join(exc.messages)
    if provider in LlmProvider.values and provider != LlmProvider.OLLAMA and not has_key:
        errors["api_key"] = "Enter the provider's API key (only Ollama runs without one)."
    return errors


def provider_setting_save(
    *,
    organization_id: Any,
    provider: str,
    base_url: str = "",
    api_key: str | None = None,
    clear_api_key: bool = False,
    actor: str,
) -> LlmProviderSetting:
    """Create or replace the organization's provider. `api_key` None keeps the stored key (unless
    `clear_api_key`); a given key replaces it."""
    from inbox.provider_settings import encrypt_key, forget

    with transaction.atomic():
        row = LlmProviderSetting.objects.select_for_update().filter(organization_id=organization_id).first()
        stored = bool(row and row.api_key_encrypted) and not clear_api_key
        errors = provider_setting_errors(
            provider=provider, base_url=base_url, has_key=bool(api_key) or stored
        )
        if errors:
            raise ConfigInvalid(errors)
        row = row or LlmProviderSetting(organization_id=organization_id)
        row.provider, row.base_url = provider, base_url
        if clear_api_key:
            row.api_key_encrypted = ""
        if api_key:
            row.api_key_encrypted = encrypt_key(api_key)
        row.save()
        audit_write(
            organization_id=organization_id,
            actor=actor,
            action="inbox.model_provider_saved",
            resource="model_provider",
            resource_id=str(row.pk),
            details={
                "provider": provider,
                "baseUrl": base_url,
                "keyReplaced": bool(api_key or clear_api_key),
            },
        )
        transaction.on_commit(lambda: forget(organization_id))
    forget(organization_id)
    return row


def provider_setting_delete(*, organization_id: Any, actor: str) -> bool:
    """Remove the organization's own provider (its calls use the environment's again)."""
    from inbox.provider_settings import forget

    with transaction.atomic():
        row = LlmProviderSetting.objects.filter(organization_id=organization_id).first()
        if row is None:
            return False
        audit_write(
            organization_id=organization_id,
            actor=actor,
            action="inbox.model_provider_removed",
            resource="model_provider",
            resource_id=str(row.pk),
        )
        row.delete()
        transaction.on_commit(lambda: forget(organization_id))
    forget(organization_id)
    return True
