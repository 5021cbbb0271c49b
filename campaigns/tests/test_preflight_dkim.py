"""Pre-flight and DKIM (owlat.domains.signing), when this installation signs (the SMTP provider): a domain
verified without DKIM is a warning; a verified domain whose key is not published is a refusal with the reason."""

from __future__ import annotations

from django.utils import timezone

from campaigns.preflight import validate_ready_to_send
from owlat.domains import keys, signing
from owlat.models import Domain


def test_unsigned_mail_warns_and_an_unsignable_domain_is_refused(make_campaign, org, settings):
    settings.EMAIL_PROVIDER, settings.EMAIL_URL = "smtp", "smtp://127.0.0.1:2525"
    signing.clear_cache()
    domain = Domain.objects.get(organization=org, domain="acme.test")
    key = keys.dkim_key_create(domain)  # a key whose record was never found: the domain cannot sign
    result = validate_ready_to_send(make_campaign())
    assert not result.ready and result.reason == "domain_not_verified"
    assert "DKIM key" in result.message and "not published yet" in result.message

    Domain.objects.filter(pk=domain.pk).update(dkim_waived_at=timezone.now())  # verified without DKIM
    signing.clear_cache()
    result = validate_ready_to_send(make_campaign())
    assert result.ready and any("verified without DKIM" in w for w in result.warnings)

    keys.dkim_keys_mark_verified(domain, [key.selector], at=timezone.now())  # the key is found: it signs
    signing.clear_cache()
    result = validate_ready_to_send(make_campaign())
    assert result.ready and not any("DKIM" in w for w in result.warnings)
    signing.clear_cache()
