"""Per-organization model provider settings (AGT-28 [orig]): resolution for `inbox.llm` and key encryption.

An organization's `LlmProviderSetting` overrides the environment's provider for that organization's calls.
The API key (and an IMAP mailbox's password) is encrypted through `owlat.encryption` under the inbox's own
purpose (`SECRET_KEY_FALLBACKS` still decrypt, so a rotated secret keeps stored keys readable). Model routing stays
system-wide (AGT-29): only provider, base URL and key are per organization."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from django.conf import settings

from owlat.encryption import Purpose, Undecryptable, decrypt, encrypt

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


#: the inbox's secrets (model provider API keys, mailbox passwords); tokens written before `owlat.encryption`
#: (sha256-derived keys) still decrypt
SECRETS = Purpose(
    salt=b"owlat-inbox-llm-key",
    info=b"inbox.provider_settings:v1",
    legacy_sha256_prefix="owlat.inbox.llm-key:",
)


def encrypt_key(plain: str) -> str:
    return encrypt(SECRETS, plain.encode()) if plain else ""


def decrypt_key(token: str) -> str:
    """The plain secret, or "" when none is stored or no configured `SECRET_KEY` decrypts it."""
    if not token:
        return ""
    try:
        return decrypt(SECRETS, token).decode()
    except Undecryptable:
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
