"""DOM-17 feature flags per organization, resolved against defaults and dependencies (D-13)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.conf import settings


@dataclass(frozen=True)
class Flag:
    default: bool
    requires: tuple[str, ...] = ()


FLAGS: dict[str, Flag] = {
    "campaigns": Flag(True),
    "campaigns.archive": Flag(True, ("campaigns",)),
    "transactional": Flag(True),
    "automations": Flag(True),
    "inbox": Flag(True),
    "ai": Flag(False),
    "ai.agent": Flag(True, ("ai", "inbox")),
    "ai.autonomy": Flag(True, ("ai", "ai.agent")),
    "webhooks": Flag(True),
}
# D-13: flags default to on for a new organization, except `ai`, which needs a configured model.


def default_flags() -> dict[str, bool]:
    return {name: flag.default for name, flag in FLAGS.items()}


#: AGT-28/AGT-30: apps that let an organization configure its own model register `check(organization_id) -> bool`
#: here (the kernel imports no app); `ai` is effective when the environment or such a check has a model.
_MODEL_PROVIDER_CHECKS: list[Callable[[Any], bool]] = []


def register_model_provider_check(check: Callable[[Any], bool]) -> None:
    if check not in _MODEL_PROVIDER_CHECKS:
        _MODEL_PROVIDER_CHECKS.append(check)


def _llm_configured(organization_id: Any = None) -> bool:
    if getattr(settings, "LLM_PROVIDER", ""):
        return True
    return organization_id is not None and any(check(organization_id) for check in _MODEL_PROVIDER_CHECKS)


def ai_needs_configuration(organization_id: Any = None) -> bool:
    """AGT-30: no model provider (environment or the organization's own) — `ai` cannot take effect."""
    return not _llm_configured(organization_id)


AI_NEEDS_PROVIDER = (
    "ai cannot be turned on: no model provider is configured for this organization. Add one under "
    "Inbox → Model providers (or set LLM_PROVIDER and LLM_API_KEY in the server's environment), then turn ai on."
)


def flag_change_refusals(
    stored: dict[str, Any] | None, wanted: dict[str, bool], organization_id: Any = None
) -> dict[str, str]:
    """AGT-30: a flag that may not be switched on now → why. Only switching on is refused (a stored `ai` whose
    provider was removed stays stored, and simply has no effect until a provider is back)."""
    refusals: dict[str, str] = {}
    was_on = bool((stored or {}).get("ai", FLAGS["ai"].default))
    if wanted.get("ai") and not was_on and ai_needs_configuration(organization_id):
        refusals["ai"] = AI_NEEDS_PROVIDER
    return refusals


def resolve_flags(stored: dict[str, Any] | None, organization_id: Any = None) -> dict[str, bool]:
    """Effective value of every flag: stored value (or default), and every required flag effective."""
    raw = {name: bool((stored or {}).get(name, flag.default)) for name, flag in FLAGS.items()}
    if not _llm_configured(organization_id):
        raw["ai"] = False
    effective: dict[str, bool] = {}

    def resolve(name: str, seen: tuple[str, ...] = ()) -> bool:
        if name in effective:
            return effective[name]
        value = raw[name] and all(
            resolve(req, (*seen, name)) for req in FLAGS[name].requires if req not in seen
        )
        effective[name] = value
        return value

    for name in FLAGS:
        resolve(name)
    return effective


def flag_enabled(organization_id: Any, flag: str) -> bool:
    from owlat.models import OrganizationSettings

    if flag not in FLAGS:
        raise KeyError(f"unknown feature flag {flag!r}")
    stored = (
        OrganizationSettings.objects.filter(organization_id=organization_id)
        .values_list("feature_flags", flat=True)
        .first()
    )
    return resolve_flags(stored, organization_id)[flag]


def feature_disabled_message(flag: str) -> str:
    return f'Feature "{flag}" is disabled on this Owlat instance. An admin can enable it from Settings → Features.'
