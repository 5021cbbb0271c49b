"""Issue 11 item 1–2 end to end: a new organization, created in the admin, adds its domain, publishes the records
in the stand-in DNS, verifies it through the admin's "Check now", and its first transactional send — refused
with `domain_unverified` before — is accepted, delivered by a real worker process to the loopback SMTP sink, and
carries a DKIM signature that dkimpy verifies against the key the stand-in DNS serves."""

from __future__ import annotations

import dkim
import pytest

from owlat.domains.resolver import lookup
from testsupport.onboarding import onboard_organization, publish_transactional

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


def dns_txt(name: bytes, timeout: int = 5) -> bytes | None:
    result = lookup(name.decode().rstrip("."), "TXT")
    return result.values[0].encode() if result.values else None


def test_new_organization_verifies_its_domain_and_sends(
    client, django_user_model, dns_stand_in, smtp_sink, workers, settings
):
    root = django_user_model.objects.create_superuser(
        username="root", password="pw", email="root@example.com"
    )
    flow = onboard_organization(
        client,
        dns_stand_in,
        root,
        name="Nova",
        domain="nova.test",
        from_email="hello@nova.test",
        from_name="Nova",
    )
    publish_transactional(
        flow.org, slug="welcome", subject="Welcome {{firstName}}", html="<p>Hi {{firstName}}</p>"
    )

    r = flow.api.post(
        "/transactional",
        {"email": "ada@example.com", "slug": "welcome", "dataVariables": {"firstName": "Ada"}},
    )
    assert r.status_code == 202, r.content
    [msg] = smtp_sink.wait_for(1, timeout=30)
    assert msg["From"] == "Nova <hello@nova.test>" and msg["Subject"] == "Welcome Ada"
    assert "d=nova.test" in msg["DKIM-Signature"]
    assert dkim.verify(msg.raw, dnsfunc=dns_txt)


def test_the_send_is_refused_until_the_domain_is_verified(client, django_user_model, dns_stand_in, smtp_sink):
    from django.urls import reverse

    from owlat.models import Domain

    root = django_user_model.objects.create_superuser(
        username="root", password="pw", email="root@example.com"
    )
    flow = onboard_organization(
        client, dns_stand_in, root, name="Vega", domain="vega.test", from_email="hi@vega.test"
    )
    publish_transactional(flow.org, slug="welcome", subject="Hi", html="<p>Hi</p>")
    # the records disappear; the next check fails the domain and the API refuses again
    dns_stand_in.remove("_owlat.vega.test")
    client.post(reverse("admin:owlat_domain_check", args=[flow.domain.pk]))
    assert Domain.objects.get(pk=flow.domain.pk).status == "failed"
    r = flow.api.post("/transactional", {"email": "ada@example.com", "slug": "welcome"})
    assert r.status_code == 422
    assert r.json()["error"]["message"] == (
        'Domain "vega.test" is not verified. Please verify DNS records in Settings > Domains.'
    )
    # published again and checked: accepted
    dns_stand_in.publish([r for r in flow.domain.dns_records if r["key"] == "ownership"])
    client.post(reverse("admin:owlat_domain_check", args=[flow.domain.pk]))
    r = flow.api.post("/transactional", {"email": "ada@example.com", "slug": "welcome"})
    assert r.status_code == 202, r.content
