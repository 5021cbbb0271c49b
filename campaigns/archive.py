"""The public archive (CMP-27 snapshot, CMP-37 page)."""

from __future__ import annotations

import secrets
from typing import Any

from campaigns.models import Campaign

TOKEN_ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-"
TOKEN_LENGTH = 24


def archive_token_generate() -> str:
    """A 24-character random token over the nanoid alphabet."""
    return "".join(secrets.choice(TOKEN_ALPHABET) for _ in range(TOKEN_LENGTH))


def archive_effectively_enabled(campaign: Campaign) -> bool:
    """The campaign's `archive_enabled`, else the organization's `campaigns.archive` flag."""
    from owlat.flags import flag_enabled

    if campaign.archive_enabled is not None:
        return bool(campaign.archive_enabled)
    return flag_enabled(campaign.organization_id, "campaigns.archive")


def archive_url(token: str) -> str:
    from delivery.tokens import site_url

    return f"{site_url()}/archive?token={token}"


def archive_public_url(campaign: Campaign) -> str | None:
    if campaign.archive_token and campaign.archive_html_content is not None:
        return archive_url(campaign.archive_token)
    return None


def archive_snapshot_fields(campaign: Campaign, entries: list[Any]) -> dict[str, Any]:
    """CMP-27: the fields to store on the campaign (empty when archiving is off or SITE_URL is unset): the
    content snapshot's variant A in the default language, without personal data (fallbacks only)."""
    from campaigns.snapshot import entry_rendered
    from delivery.tokens import site_url

    if not site_url() or not archive_effectively_enabled(campaign) or not entries:
        return {}
    entry = next((e for e in entries if e.variant == "A" and e.is_default_language), entries[0])
    subject, html = entry_rendered(entry)
    return {
        "archive_token": campaign.archive_token or archive_token_generate(),
        "archive_html_content": html,
        "archive_subject": subject,
    }


def archive_lookup(token: str) -> Campaign | None:
    """CMP-37: only a `sent` campaign with archiving effectively enabled and a snapshot."""
    if not token or len(token) > 64:
        return None
    campaign = Campaign.objects.filter(archive_token=token).first()
    if (
        campaign is None
        or campaign.status != "sent"
        or campaign.archive_html_content is None
        or not archive_effectively_enabled(campaign)
    ):
        return None
    return campaign
