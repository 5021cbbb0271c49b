"""A domain verified by one organization cannot be claimed by another (owlat/domains/verification.py, the admin's
domain form, the unique constraint `uniq_verified_domain`), and the inbound router routes only to verified
domains (inbox/views.py)."""

from __future__ import annotations

import pytest
from django.db import IntegrityError, transaction

from inbox.views import organization_for_recipients
from owlat.domains.verification import domain_check, domain_override, domain_register
from owlat.models import Domain, Membership
from owlat.tests.factories import make_org

pytestmark = pytest.mark.django_db


@pytest.fixture
def dns_settings(settings):
    settings.SITE_URL = "https://owlat.example.net"
    settings.DOMAIN_SPF_MECHANISM = ""
    settings.BOUNCE_DOMAIN = ""


def registered(org, name="acme.test") -> Domain:
    domain = Domain.objects.create(organization=org, domain=name)
    assert domain_register(domain, actor="user:1").ok
    domain.refresh_from_db()
    return domain


def test_a_domain_verified_by_one_organization_cannot_be_verified_by_another(dns_settings, dns_stand_in):
    owner, other = make_org("Acme"), make_org("Mallory")
    squatter = registered(other)  # pending first: registration proves nothing
    mine = registered(owner)
    dns_stand_in.publish(mine.dns_records)
    assert domain_check(mine, actor="user:1").to_state == "verified"
    # even with every record of its own published (the owner would not, but say they did), the other cannot
    dns_stand_in.publish(squatter.dns_records)
    outcome = domain_check(squatter, actor="user:2")
    assert not outcome.ok and outcome.reason == "claimed_elsewhere"
    assert "verified by another organization" in outcome.message
    squatter.refresh_from_db()
    assert squatter.status == "pending"
    refused = domain_override(squatter, actor="staff:1", reason="local setup")
    assert not refused.ok and refused.reason == "claimed_elsewhere"
    assert Domain.objects.get(pk=squatter.pk).status == "pending"


def test_the_database_holds_one_verified_row_per_name(dns_settings):
    first, second = registered(make_org("Acme")), registered(make_org("Other"))
    assert domain_override(first, actor="staff:1").ok
    with pytest.raises(IntegrityError), transaction.atomic():
        Domain.objects.filter(pk=second.pk).update(status="verified")


def test_the_admin_refuses_to_register_a_name_another_organization_verified(
    dns_settings, client, django_user_model
):
    owner, other = make_org("Acme"), make_org("Mallory")
    assert domain_override(registered(owner), actor="staff:1").ok
    user = django_user_model.objects.create_user(username="m", password="pw", is_staff=True)
    Membership.objects.create(user=user, organization=other, role="owner")
    client.force_login(user)
    response = client.post("/admin/owlat/domain/add/", {"organization": other.pk, "domain": "ACME.test"})
    assert response.status_code == 200
    assert "verified by another organization" in response.content.decode()
    assert not Domain.objects.filter(organization=other).exists()
    # a name nobody verified yet can be registered by anyone (DNS decides)
    response = client.post("/admin/owlat/domain/add/", {"organization": other.pk, "domain": "mallory.test"})
    assert response.status_code == 302 and Domain.objects.filter(organization=other).count() == 1


def test_the_inbound_router_routes_only_to_a_verified_domain(dns_settings):
    owner, other = make_org("Acme"), make_org("Mallory")
    registered(other)  # the earliest registration, pending
    mine = registered(owner)
    assert organization_for_recipients(["support@acme.test"]) is None
    assert domain_override(mine, actor="staff:1").ok
    assert organization_for_recipients(["support@acme.test", "x@unknown.test"]) == owner.pk
