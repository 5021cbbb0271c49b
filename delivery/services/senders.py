"""Sender and provider checks: the organization's default sender and sending-domain problems (DOM-12)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Sender:
    email: str
    name: str


def default_sender(organization_id: Any) -> Sender | None:
    from owlat.organizations import organization_settings

    s = organization_settings(organization_id)
    if not (s.default_from_email or "").strip():
        return None
    return Sender(email=s.default_from_email.strip(), name=(s.default_from_name or "").strip())


def sender_domain_problem(organization_id: Any, email: str) -> str | None:
    """DOM-12: None when the address's domain is registered and verified, else the message. On the SMTP path
    (the installation signs itself) a verified domain that should sign with DKIM and cannot is refused too, with
    the reason (`owlat.domains.signing`; the `DKIM_UNSIGNABLE` setting can let such mail go out unsigned)."""
    from owlat.models import Domain, DomainStatus

    domain = email.rpartition("@")[2].strip().lower()
    row = Domain.objects.filter(organization_id=organization_id, domain__iexact=domain).first()
    if row is None:
        return f'Domain "{domain}" is not registered. Please add it in Settings > Domains.'
    if row.status != DomainStatus.VERIFIED:
        return f'Domain "{domain}" is not verified. Please verify DNS records in Settings > Domains.'
    from owlat.domains.signing import installation_signs, signing_problem

    return signing_problem(organization_id, email) if installation_signs() else None
