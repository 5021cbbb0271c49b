"""Campaign test send: the campaign's own subject (per variant), sender with display name, template and
language, to a few addresses, as `test` sends — never tracked and never in a contact's history."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError
from django.core.validators import validate_email

from campaigns.models import Campaign

MAX_TEST_RECIPIENTS = 5


def _addresses(to: list[str]) -> list[str]:
    cleaned = [a.strip() for a in to if a and a.strip()]
    if not cleaned:
        raise ValueError("to: give at least one address")
    if len(cleaned) > MAX_TEST_RECIPIENTS:
        raise ValueError(f"to: at most {MAX_TEST_RECIPIENTS} addresses per test send")
    for address in cleaned:
        if len(address) > 254:
            raise ValueError(f"to: {address[:40]}… is too long")
        try:
            validate_email(address)
        except ValidationError as exc:
            raise ValueError(f"to: {address[:40]} is not an email address") from exc
    return cleaned


def campaign_test_send(
    *, campaign: Campaign, to: list[str], variant: str | None = None, language: str | None = None
) -> list[Any]:
    """Queue one test send per address with the campaign's subject, sender and template for the variant."""
    from campaigns.walker import _Contents
    from delivery.services.direct import test_email_send

    addresses = _addresses(to)
    if campaign.email_template_id is None:
        raise ValueError("email_template: choose a template before sending a test")
    content = _Contents(campaign).for_variant(variant)
    sends = []
    for address in addresses:
        sends.append(
            test_email_send(
                organization_id=campaign.organization_id,
                to=address,
                email_template_id=content.template.pk,
                language=language,
                subject=content.subject_source or None,
                from_email=campaign.from_email or None,
                from_name=campaign.from_name or None,
            )
        )
    return sends
