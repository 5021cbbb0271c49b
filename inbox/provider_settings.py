"""Per-organization model provider settings (AGT-28 [orig]): resolution for `inbox.llm` and key encryption.

An organization's `LlmProviderSetting` overrides the environment's provider for that organization's calls.
The API key is encrypted with Fernet (the `cryptography` package) under a key derived from `SECRET_KEY`
(`SECRET_KEY_FALLBACKS` still decrypt, so a rotated secret keeps stored keys readable). Model routing stays
system-wide (AGT-29): only provider, base URL and key are per organization."""

from __future__ import annotations

import base64
import hashlib
import time
from dataclasses import dataclass
from typing import Any

from cryptography.fernet import Fernet, InvalidToken, MultiFernet
from django.conf import settings

PROVIDER_BASE_URLS = {
    "openai": None,  # the client's default
    "openrouter": "https://openrouter.ai/api/v1",
    "ollama": "http://ollama:11434/v1",
}
_TTL_SECONDS = 10.0
_cache: dict[Any, tuple[float, ProviderConfig | None]] = {}


@dataclass(frozen=True)
class ProviderConfig:
    provider: str
    base_url: str | None
    api_key: str
    tenant: bool  # set by an organization: its base URL goes through the outbound guard

    @property
    def usable(self) -> bool:
        return bool(self.provider) and (bool(self.api_key) or self.provider == "ollama")


def _fernet() -> MultiFernet:
    secrets = [settings.SECRET_KEY, *getattr(settings, "SECRET_KEY_FALLBACKS", [])]
    keys = [
        Fernet(base64.urlsafe_b64encode(hashlib.sha256(f"owlat.inbox.llm-key:{s}".encode()).digest()))
        for s in secrets
    ]
    return MultiFernet(keys)


def encrypt_key(plain: str) -> str:
    return _fernet().encrypt(plain.encode()).decode() if plain else ""


def decrypt_key(token: str) -> str:
    if not token:
        return ""
    try:
        return _fernet().decrypt(token.encode()).decode()
    except InvalidToken:
        return ""


def environment_provider() -> ProviderConfig:
    key = settings.LLM_API_KEY or settings.OPENROUTER_API_KEY or settings.OPENAI_API_KEY
    provider = settings.LLM_PROVIDER
    return ProviderConfig(
        provider=provider,
        base_url=settings.LLM_BASE_URL or PROVIDER_BASE_URLS.get(provider),
        api_key=key,
        tenant=False,
    )


def organization_provider(organization_id: Any) -> ProviderConfig | None:
    """The organization's stored provider (cached for a few seconds per process), or None."""
    if organization_id is None:
        return None
    hit = _cache.get(organization_id)
    now = time.monotonic()
    if hit is not None and now - hit[0] < _TTL_SECONDS:
        return hit[1]
    from inbox.models import LlmProviderSetting

    row = LlmProviderSetting.objects.filter(organization_id=organization_id).first()
    config = None
    if row is not None:
        config = ProviderConfig(
            provider=row.provider,
            base_url=row.base_url or PROVIDER_BASE_URLS.get(row.provider),
            api_key=decrypt_key(row.api_key_encrypted),
            tenant=True,
        )
    _cache[organization_id] = (now, config)
    return config


def provider_for(organization_id: Any = None) -> ProviderConfig:
    return organization_provider(organization_id) or environment_provider()


def forget(organization_id: Any = None) -> None:
    """Drop the cached resolution (after a save; tests)."""
    if organization_id is None:
        _cache.clear()
    else:
        _cache.pop(organization_id, None)


def organization_has_provider(organization_id: Any) -> bool:
    """The organization's own provider is usable (the kernel's `ai` flag asks through its registry)."""
    config = organization_provider(organization_id)
    return config is not None and config.usable
