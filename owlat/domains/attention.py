"""The sending domains' part of the admin dashboard's "Needs attention" (`owlat.admin.dashboard` registry,
registered in `OwlatConfig.ready()`): domains that are not verified (sends from them are refused) and verified
domains whose verification is stale (older than 24 h, DOM-12: a warning)."""

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
