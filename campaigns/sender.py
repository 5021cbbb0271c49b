"""The sender a campaign's mail carries: its own address, else the organization's default sender; its own display
name, else the name the chosen address has (the curated sender's display name, or the default sender's name).
Read at pre-flight, at send and for test sends, so a campaign naming no sender follows the organization's
current default until it is sent."""

from __future__ import annotations

from typing import Any

from campaigns.models import Campaign
from delivery.services.senders import Sender


def campaign_sender(campaign: Campaign, *, settings_row: Any = None) -> Sender:
    """The effective From of `campaign`; `email` is "" when neither the campaign nor the organization names one."""
    from owlat.models import CampaignSender
    from owlat.organizations import organization_settings

    s = settings_row or organization_settings(campaign.organization_id)
    default_email = (s.default_from_email or "").strip()
    default_name = (s.default_from_name or "").strip()
    email = (campaign.from_email or "").strip() or default_email
    name = (campaign.from_name or "").strip()
    if not name and email:
        if email.lower() == default_email.lower():
            name = default_name
        else:
            curated = (
                CampaignSender.objects.filter(organization_id=campaign.organization_id, email__iexact=email)
                .values_list("display_name", flat=True)
                .first()
            )
            name = (curated or "").strip()
    return Sender(email=email, name=name)
