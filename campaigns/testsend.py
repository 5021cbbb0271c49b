"""Campaign test send: the campaign's own subject (per variant; delivery marks a test `[Test] `), its effective sender with display
name (`campaigns.sender`), template and language, to a few addresses, as `test` sends through the ordinary
delivery path — never tracked, never a campaign send row, never in a contact's history. Shared by the admin's
"Send test…" page and `POST /campaigns/{id}/test-send`."""

from __future__ import annotations

from typing import Any

from campaigns.models import Campaign
from campaigns.services import CampaignError, _authorize
from owlat.permissions import Authority

MAX_TEST_RECIPIENTS = 5


def _invalid(message: str) -> CampaignError:
    return CampaignError("invalid_input", message, field="to", category="invalid_input")


def recipients_clean(to: list[str]) -> list[str]:
    """1 to MAX_TEST_RECIPIENTS distinct valid addresses, else `CampaignError` naming the field `to`."""
    from owlat.contacts import is_valid_email

    cleaned = list(dict.fromkeys(a.strip() for a in to if a and a.strip()))
    if not cleaned:
        raise _invalid("Give at least one address")
    if len(cleaned) > MAX_TEST_RECIPIENTS:
        raise _invalid(f"At most {MAX_TEST_RECIPIENTS} addresses per test send")
    for address in cleaned:
        if len(address) > 254 or not is_valid_email(address):
            raise _invalid(f"{address[:40]} is not an email address")
    return cleaned


def campaign_test_languages(campaign: Campaign) -> list[str]:
    """The languages a test can be sent in: the template's default first, then each language it has translated
    content for (DOM-13; another language would fall back to the default)."""
    template = campaign.email_template
    if template is None:
        return []
    default = template.default_language or "en"
    found = [default]
    for language, entry in (template.html_translations or {}).items():
        if isinstance(entry, dict) and (entry.get("htmlContent") or "").strip() and language not in found:
            found.append(language)
    return found


def campaign_test_send(
    *,
    campaign: Campaign,
    to: list[str],
    authority: Authority,
    variant: str | None = None,
    language: str | None = None,
) -> list[Any]:
    """Queue one `test` send per address with the campaign's subject, sender and template for the variant;
    returns the send rows. Refusals raise `CampaignError` (`to` invalid, no template, no delivery)."""
    from campaigns.sender import campaign_sender
    from campaigns.walker import _Contents
    from delivery.providers import delivery_configured
    from delivery.services.direct import test_email_send
    from templates.rendering import template_sources

    _authorize(campaign.organization_id, authority, "test-send")
    addresses = recipients_clean(to)
    if campaign.email_template_id is None:
        raise CampaignError("no_template", "Choose a template before sending a test")
    if not delivery_configured():
        raise CampaignError("no_delivery_provider", "No delivery provider configured")
    sender = campaign_sender(campaign)
    if not sender.email:
        raise CampaignError("no_from_email", "Campaign must have a from email address")
    if language and language not in campaign_test_languages(campaign):
        choices = ", ".join(campaign_test_languages(campaign))
        raise CampaignError(
            "invalid_input",
            f"The template has no content in “{language[:16]}”; choose one of: {choices}",
            field="language",
            category="invalid_input",
        )
    content = _Contents(campaign).for_variant(variant)
    subject = content.subject_source or template_sources(content.template, language).subject or ""
    return [
        test_email_send(
            organization_id=campaign.organization_id,
            to=address,
            email_template_id=content.template.pk,
            language=language,
            subject=subject,
            from_email=sender.email,
            from_name=sender.name or None,
        )
        for address in addresses
    ]
