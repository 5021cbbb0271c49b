"""CMP-21 pre-flight: the one readiness check shared by the admin, the API, the wrappers and the orchestrator
(CMP-24). The first failing check wins; the lifecycle reducer trusts its input.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import Any

from django.utils import timezone

from campaigns.models import Campaign

MESSAGES = {
    "no_template": "Campaign must have an email template selected",
    "no_audience": "Campaign must have an audience configured",
    "no_from_email": "Campaign must have a from email address",
    "suspended": (
        "Sending is not allowed: this organization has been suspended due to policy violations. "
        "Please contact support."
    ),
    "banned": "Sending is not allowed: this organization has been permanently disabled.",
    "no_delivery_provider": (
        "Cannot send campaign: no email delivery provider is configured. "
        "Please configure an email provider (EMAIL_PROVIDER) before sending."
    ),
    "scheduled_in_past": "Scheduled time must be in the future",
}

#: The CMP-21 order.
CHECK_ORDER = (
    "no_template",
    "no_audience",
    "no_from_email",
    "sending_not_allowed",
    "no_delivery_provider",
    "domain_not_verified",
    "sender_not_allowed",
    "scheduled_in_past",
    "exceeds_sending_capacity",
)


@dataclass(frozen=True)
class PreflightResult:
    ready: bool
    reason: str | None = None
    message: str | None = None
    warnings: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {
            "ready": self.ready,
            "reason": self.reason,
            "message": self.message,
            "warnings": self.warnings,
        }


def _fail(reason: str, message: str, warnings: list[str]) -> PreflightResult:
    return PreflightResult(ready=False, reason=reason, message=message, warnings=warnings)


def sender_allowed(organization_id: Any, from_email: str, *, settings_row: Any = None) -> bool:
    """CMP-21 #7: an enabled curated sender, the organization's default sender, or custom senders allowed.
    `settings_row`: the organization's settings when the caller has already read them."""
    from owlat.models import CampaignSender
    from owlat.organizations import organization_settings

    settings_row = settings_row or organization_settings(organization_id)
    if settings_row.is_custom_campaign_senders_allowed:
        return True
    address = from_email.strip().lower()
    if address and address == (settings_row.default_from_email or "").strip().lower():
        return True
    return CampaignSender.objects.filter(
        organization_id=organization_id, email__iexact=address, is_enabled=True
    ).exists()


def _template_exists(campaign: Campaign) -> bool:
    from templates.models import EmailTemplate

    return (
        campaign.email_template_id is not None
        and EmailTemplate.objects.filter(
            pk=campaign.email_template_id, organization_id=campaign.organization_id
        ).exists()
    )


def validate_ready_to_send(
    campaign: Campaign,
    *,
    scheduled_at: dt.datetime | None = None,
    now: dt.datetime | None = None,
    check_capacity: bool = True,
) -> PreflightResult:
    """CMP-21 checks 1–9 in order, without side effects. The orchestrator passes `check_capacity=False`
    (CMP-24: the capacity check, #9, is skipped at fire time; see `campaigns.capacity`)."""
    from campaigns.sender import campaign_sender
    from delivery.providers import delivery_configured
    from delivery.services import sender_domain_problem
    from owlat.domains.signing import dkim_warning, installation_signs
    from owlat.domains.verification import stale_warning
    from owlat.models import AbuseStatus, Domain
    from owlat.organizations import organization_settings

    now = now or timezone.now()
    warnings: list[str] = []
    if not _template_exists(campaign):
        return _fail("no_template", MESSAGES["no_template"], warnings)
    if not isinstance(campaign.audience, dict) or campaign.audience.get("kind") not in ("topic", "segment"):
        return _fail("no_audience", MESSAGES["no_audience"], warnings)
    org_settings = organization_settings(campaign.organization_id)
    from_email = campaign_sender(campaign, settings_row=org_settings).email
    if not from_email:
        return _fail("no_from_email", MESSAGES["no_from_email"], warnings)
    abuse = org_settings.abuse_status
    if abuse in (AbuseStatus.SUSPENDED, AbuseStatus.BANNED):
        return _fail("sending_not_allowed", MESSAGES[abuse], warnings)
    if not delivery_configured():
        return _fail("no_delivery_provider", MESSAGES["no_delivery_provider"], warnings)
    problem = sender_domain_problem(campaign.organization_id, from_email)
    if problem:
        return _fail("domain_not_verified", problem, warnings)
    domain = from_email.rpartition("@")[2].lower()
    row = Domain.objects.filter(organization_id=campaign.organization_id, domain__iexact=domain).first()
    stale = stale_warning(row, now) if row is not None else None  # DOM-12: older than 24 h, a warning only
    if stale:
        warnings.append(stale)
    unsigned = dkim_warning(row) if installation_signs() else None  # verified without DKIM, no key
    if unsigned:
        warnings.append(unsigned)
    if not sender_allowed(campaign.organization_id, from_email, settings_row=org_settings):
        return _fail(
            "sender_not_allowed",
            f'Cannot send campaign: "{from_email}" is not an approved sender for this organization. '
            "Choose an enabled campaign sender.",
            warnings,
        )
    if scheduled_at is not None and scheduled_at <= now:
        return _fail("scheduled_in_past", MESSAGES["scheduled_in_past"], warnings)
    if check_capacity:
        from campaigns.capacity import assess_capacity

        plan = assess_capacity(campaign.organization_id, campaign.audience, now=now, starts_at=scheduled_at)
        if plan is not None and not plan.fits:
            return _fail("exceeds_sending_capacity", plan.message(), warnings)
    return PreflightResult(ready=True, warnings=warnings)
