"""The sending domains' part of the admin dashboard's "Needs attention" (`owlat.admin.dashboard` registry,
registered in `OwlatConfig.ready()`): domains that are not verified (sends from them are refused), verified
domains whose verification is stale (older than 24 h, DOM-12: a warning), and — when this installation signs
(the SMTP provider) — verified domains that cannot sign with DKIM (refused, or sent unsigned under
`DKIM_UNSIGNABLE=send_unsigned`) or send unsigned by design (verified without DKIM, no key)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from django.urls import reverse
from django.utils import timezone

from owlat.models import Domain, DomainStatus


def domain_attention(organization_id: Any) -> Iterator[Any]:
    from owlat.admin.dashboard import AttentionItem
    from owlat.domains.verification import stale_after

    qs = Domain.objects.all()
    if organization_id is not None:
        qs = qs.filter(organization_id=organization_id)
    link = reverse("admin:owlat_domain_changelist")
    unverified = qs.exclude(status=DomainStatus.VERIFIED).count()
    if unverified:
        yield AttentionItem(
            f"{unverified} sending domain(s) not verified",
            link=link + "?status__exact=failed" if qs.filter(status=DomainStatus.FAILED).exists() else link,
            severity="danger",
            detail="Mail from them is refused: publish the DNS records shown on the domain's page, then press "
            "Check now.",
        )
    stale = (
        qs.filter(status=DomainStatus.VERIFIED, verification_overridden_at__isnull=True)
        .exclude(last_verified_at__gte=timezone.now() - stale_after())
        .count()
    )
    if stale:
        yield AttentionItem(
            f"{stale} sending domain(s) with a stale verification (older than 24 h)",
            link=link + "?status__exact=verified",
            severity="warning",
            detail="The re-check could not confirm their DNS records; open the domain and press Check now.",
        )
    yield from _dkim_attention(qs.filter(status=DomainStatus.VERIFIED), link)


def _dkim_attention(verified: Any, link: str) -> Iterator[Any]:
    from owlat.admin.dashboard import AttentionItem
    from owlat.domains.signing import SIGN, UNSIGNABLE, domain_plan, installation_signs, unsignable_policy

    if not installation_signs():
        return  # the provider signs for us
    unsignable: list[str] = []
    unsigned: list[str] = []
    for domain in verified.order_by("domain")[:200]:
        action = domain_plan(domain).action
        if action == UNSIGNABLE:
            unsignable.append(domain.domain)
        elif action != SIGN:
            unsigned.append(domain.domain)
    if unsignable:
        refused = unsignable_policy() == "refuse"
        yield AttentionItem(
            f"{len(unsignable)} sending domain(s) cannot sign with DKIM: {', '.join(unsignable[:5])}",
            link=link + "?status__exact=verified",
            severity="danger",
            detail=("Their mail is refused" if refused else "Their mail is sent without a DKIM signature")
            + ": publish the DKIM record shown on the domain's page and press Check now (or restore the "
            "SECRET_KEY the key was stored with).",
        )
    if unsigned:
        yield AttentionItem(
            f"{len(unsigned)} sending domain(s) send without DKIM: {', '.join(unsigned[:5])}",
            link=link + "?status__exact=verified",
            severity="warning",
            detail="Verified without DKIM (or without a key): receivers may reject their mail. Publish the DKIM "
            "record shown on the domain's page and press Check now.",
        )
