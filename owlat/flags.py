"""DOM-17 feature flags per organization, resolved against defaults and dependencies (D-13)."""

from __future__ import annotations

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


def _llm_configured() -> bool:
    return bool(getattr(settings, "LLM_PROVIDER", ""))


def resolve_flags(stored: dict[str, Any] | None) -> dict[str, bool]:
    """Effective value of every flag: stored value (or default), and every required flag effective."""
    raw = {name: bool((stored or {}).get(name, flag.default)) for name, flag in FLAGS.items()}
    if not _llm_configured():
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
    return resolve_flags(stored)[flag]


def feature_disabled_message(flag: str) -> str:
    return f'Feature "{flag}" is disabled on this Owlat instance. An admin can enable it from Settings → Features.'
