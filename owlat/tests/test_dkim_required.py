"""Signing is never silently off: the staff override stamps the DKIM key when its record is published (or when
staff trust it), else verifies the domain *without DKIM* — sent unsigned, with warnings in the pre-flight, on
the domain page and on the dashboard — and a check that later finds the key ends the waiver. A verified domain
whose key is not published is unsignable: its sends are refused at intake with the reason (or sent unsigned
under `DKIM_UNSIGNABLE=send_unsigned`), and the dashboard names it."""

from __future__ import annotations

import pytest
from django.urls import reverse

from delivery.services import sender_domain_problem
from owlat.domains import keys, signing
from owlat.domains.attention import domain_attention
from owlat.domains.verification import DKIM_TRUST, domain_check, domain_override, domain_register
from owlat.models import AuditLog, Domain
from owlat.tests.factories import make_org

pytestmark = pytest.mark.django_db


@pytest.fixture
def smtp_settings(settings):
    settings.EMAIL_PROVIDER = "smtp"
    settings.SITE_URL = "https://owlat.example.net"
    settings.BOUNCE_DOMAIN = ""
    signing.clear_cache()
    yield settings
    signing.clear_cache()


@pytest.fixture
def pending(smtp_settings, dns_stand_in):
    org = make_org("Acme")
    domain = Domain.objects.create(organization=org, domain="acme.test")
    domain_register(domain, actor="user:1")
    domain.refresh_from_db()
    return domain


def _dkim_records(domain: Domain) -> list[dict]:
    return [r for r in domain.dns_records if r["kind"] == "dkim"]


def test_override_without_a_published_key_verifies_without_dkim_and_warns(pending, dns_stand_in):
    outcome = domain_override(pending, actor="staff:1", reason="local setup")
    assert outcome.ok and outcome.to_state == "verified"
    pending.refresh_from_db()
    assert pending.dkim_waived_at is not None
    assert keys.signing_key(keys.live_keys(pending)) is None
    assert signing.signing_plan(pending.organization_id, "hi@acme.test").action == signing.UNSIGNED
    assert sender_domain_problem(pending.organization_id, "hi@acme.test") is None  # sent, unsigned
    assert "verified without DKIM" in signing.dkim_warning(pending)
    audit = AuditLog.objects.get(action="domain.verification_overridden")
    assert audit.details["dkim"] == "waived"
    titles = [i.title for i in domain_attention(pending.organization_id)]
    assert "1 sending domain(s) send without DKIM: acme.test" in titles

    # the key's record appears: the next check stamps it and ends the waiver
    dns_stand_in.publish(_dkim_records(pending))
    domain_check(pending, actor="cron")
    pending.refresh_from_db()
    signing.clear_cache()
    assert pending.status == "verified" and pending.dkim_waived_at is None
    assert signing.signing_plan(pending.organization_id, "hi@acme.test").action == signing.SIGN
    assert signing.dkim_warning(pending) is None


def test_override_with_the_key_published_stamps_it_and_signs(pending, dns_stand_in):
    dns_stand_in.publish(_dkim_records(pending))
    assert domain_override(pending, actor="staff:1", reason="no public ownership record").ok
    pending.refresh_from_db()
    assert pending.dkim_waived_at is None
    assert keys.signing_key(keys.live_keys(pending)) is not None
    assert AuditLog.objects.get(action="domain.verification_overridden").details["dkim"] == "published"
    assert signing.signing_plan(pending.organization_id, "hi@acme.test").action == signing.SIGN


def test_override_trusting_the_key_signs_without_a_lookup(pending, dns_stand_in):
    assert domain_override(pending, actor="staff:1", reason="private DNS", dkim=DKIM_TRUST).ok
    assert not [q for q in dns_stand_in.queries if "_domainkey" in q[0]]
    pending.refresh_from_db()
    assert pending.dkim_waived_at is None
    assert AuditLog.objects.get(action="domain.verification_overridden").details["dkim"] == "trusted"
    assert signing.signing_plan(pending.organization_id, "hi@acme.test").action == signing.SIGN


def test_a_verified_domain_whose_key_is_unpublished_is_refused_with_the_reason(smtp_settings):
    org = make_org("Acme")
    domain = Domain.objects.create(organization=org, domain="acme.test", status="verified")
    keys.dkim_key_create(domain)  # generated, never found in DNS
    problem = sender_domain_problem(org.pk, "hi@acme.test")
    assert problem and "acme.test" in problem and "not published yet" in problem and "Check now" in problem
    [item] = [i for i in domain_attention(org.pk) if "DKIM" in i.title]
    assert item.severity == "danger" and "refused" in item.detail

    smtp_settings.DKIM_UNSIGNABLE = "send_unsigned"
    signing.clear_cache()
    assert sender_domain_problem(org.pk, "hi@acme.test") is None
    assert "without a DKIM signature" in signing.dkim_warning(domain)
    [item] = [i for i in domain_attention(org.pk) if "DKIM" in i.title]
    assert "sent without a DKIM signature" in item.detail


def test_a_key_that_cannot_be_decrypted_is_unsignable(smtp_settings):
    org = make_org("Acme")
    domain = Domain.objects.create(organization=org, domain="acme.test", status="verified")
    key = keys.dkim_key_create(domain)
    keys.dkim_keys_mark_verified(domain, [key.selector], at=key.created_at)
    smtp_settings.SECRET_KEY = "a-different-secret-0123456789abcdefghijklmnop"
    signing.clear_cache()
    problem = sender_domain_problem(org.pk, "hi@acme.test")
    assert problem and "SECRET_KEY_FALLBACKS" in problem


def test_the_admin_override_offers_the_dkim_choice(client, django_user_model, pending):
    root = django_user_model.objects.create_superuser(username="root", password="pw")
    client.force_login(root)
    client.post(reverse("admin:owlat_switch_organization"), {"organization": str(pending.organization_id)})
    page = client.get(reverse("admin:owlat_domain_change", args=[pending.pk])).content.decode()
    assert 'name="dkim" value="check"' in page and 'name="dkim" value="trust"' in page
    response = client.post(
        reverse("admin:owlat_domain_override", args=[pending.pk]),
        {"reason": "local test setup", "dkim": "check"},
        follow=True,
    )
    html = response.content.decode()
    assert "without DKIM" in html and 'id="domain-dkim-warning"' in html
