"""Pre-flight's stale-domain warning follows DOM-12 (owlat.domains.verification): a verification older than 24 h
is a warning, never a refusal; a staff override is not flagged."""

from __future__ import annotations

import datetime as dt

from django.utils import timezone

from campaigns.preflight import validate_ready_to_send
from owlat.models import Domain


def test_a_verification_older_than_24_hours_is_a_warning(make_campaign, org):
    now = timezone.now()
    Domain.objects.filter(organization=org).update(last_verified_at=now - dt.timedelta(hours=23))
    result = validate_ready_to_send(make_campaign(), now=now)
    assert result.ready and result.warnings == []

    Domain.objects.filter(organization=org).update(last_verified_at=now - dt.timedelta(hours=25))
    result = validate_ready_to_send(make_campaign(), now=now)
    assert result.ready
    assert result.warnings == [
        f'Verification of "acme.test" is stale (last confirmed '
        f"{(now - dt.timedelta(hours=25)).strftime('%Y-%m-%d %H:%M')} UTC); "
        "check its DNS records now (Settings > Domains > Check now)."
    ]

    Domain.objects.filter(organization=org).update(verification_overridden_at=now)
    assert validate_ready_to_send(make_campaign(), now=now).warnings == []
