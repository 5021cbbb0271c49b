"""The sending-domain admin page (issue 11 item 1): add a domain, see each record with its state, "Check now",
DKIM rotation, the staff-only audited override; against the loopback DNS stand-in."""

from __future__ import annotations

import pytest
from django.urls import reverse

from owlat.models import AuditLog, DkimKey, Domain
from owlat.organizations import organization_create

pytestmark = pytest.mark.django_db


@pytest.fixture
def org():
    return organization_create(name="Acme")


def _add(client, name="Acme.TEST"):
    response = client.post(reverse("admin:owlat_domain_add"), {"domain": name, "provider_type": ""})
    assert response.status_code == 302, response.content.decode()[:2000]
    return Domain.objects.get(domain=name.lower())


def test_add_shows_every_record_and_check_now_verifies(client, staff_owner, org, dns_stand_in):
    domain = _add(client)
    assert domain.status == "pending" and domain.organization == org
    change = reverse("admin:owlat_domain_change", args=[domain.pk])
    html = client.get(change).content.decode()
    assert 'id="domain-check-form"' in html and "Check now" in html
    for record in domain.dns_records:
        assert record["name"] in html and record["value"] in html
    assert html.count('data-state="unchecked"') == len(domain.dns_records)
    assert 'id="domain-override"' not in html  # members never see the staff override

    check = reverse("admin:owlat_domain_check", args=[domain.pk])
    response = client.post(check, follow=True)
    html = response.content.decode()
    assert "acme.test is failed" in html and html.count('data-state="missing"') == len(domain.dns_records)

    dns_stand_in.publish(domain.dns_records, skip=["dmarc"])
    html = client.post(check, follow=True).content.decode()
    assert 'data-state="missing"' in html and html.count('data-state="ok"') == len(domain.dns_records) - 1

    dns_stand_in.publish([r for r in domain.dns_records if r["key"] == "dmarc"])
    html = client.post(check, follow=True).content.decode()
    assert "acme.test is verified." in html
    domain.refresh_from_db()
    assert domain.status == "verified"
    assert client.get(check).status_code == 405


def test_bad_domain_names_are_refused_with_what_to_enter(client, staff_owner):
    response = client.post(reverse("admin:owlat_domain_add"), {"domain": "user@acme.test"})
    assert response.status_code == 200
    assert "Enter a domain name such as mail.example.com" in response.content.decode()
    assert not Domain.objects.exists()


def test_rotation_keeps_the_old_key_until_the_new_one_is_published(client, staff_owner, dns_stand_in):
    domain = _add(client)
    dns_stand_in.publish(domain.dns_records)
    client.post(reverse("admin:owlat_domain_check", args=[domain.pk]))
    old = DkimKey.objects.get(domain=domain)
    assert old.verified_at

    response = client.post(reverse("admin:owlat_domain_rotate_dkim", args=[domain.pk]), follow=True)
    assert "keeps signing until the new record is found" in response.content.decode()
    new = DkimKey.objects.exclude(pk=old.pk).get(domain=domain)
    domain.refresh_from_db()
    assert [r["key"] for r in domain.dns_records if r["kind"] == "dkim"] == [
        f"dkim:{old.selector}",
        f"dkim:{new.selector}",
    ]
    assert AuditLog.objects.filter(action="domain.dkim_key_created", details__selector=new.selector).exists()

    # not published yet: the domain stays verified on the old key, which is not retired
    client.post(reverse("admin:owlat_domain_check", args=[domain.pk]))
    domain.refresh_from_db()
    old.refresh_from_db()
    assert domain.status == "verified" and old.retired_at is None
    assert domain.dns_checks[f"dkim:{new.selector}"]["state"] == "missing"

    # published: the new key verifies, the old one retires and leaves the records
    dns_stand_in.publish([r for r in domain.dns_records if r["key"] == f"dkim:{new.selector}"])
    client.post(reverse("admin:owlat_domain_check", args=[domain.pk]))
    domain.refresh_from_db()
    old.refresh_from_db()
    new.refresh_from_db()
    assert domain.status == "verified" and new.verified_at and old.retired_at
    assert [r["key"] for r in domain.dns_records if r["kind"] == "dkim"] == [f"dkim:{new.selector}"]


def test_override_is_staff_only_needs_a_reason_and_is_audited(client, staff_owner, org, django_user_model):
    domain = _add(client)
    override = reverse("admin:owlat_domain_override", args=[domain.pk])
    assert client.post(override, {"reason": "local"}).status_code == 403
    domain.refresh_from_db()
    assert domain.status == "pending"

    root = django_user_model.objects.create_superuser(username="root", password="pw")
    client.force_login(root)
    client.post(reverse("admin:owlat_switch_organization"), {"organization": str(org.pk)})
    html = client.get(reverse("admin:owlat_domain_change", args=[domain.pk])).content.decode()
    assert 'id="domain-override"' in html
    response = client.post(override, {"reason": ""}, follow=True)
    assert "Give a reason for the override" in response.content.decode()
    response = client.post(override, {"reason": "local test setup"}, follow=True)
    assert "marked verified by override (audited)" in response.content.decode()
    domain.refresh_from_db()
    assert domain.status == "verified" and domain.verification_overridden_at
    audit = AuditLog.objects.get(action="domain.verification_overridden")
    assert audit.user_id == str(root.pk) and audit.details["reason"] == "local test setup"


def test_dashboard_needs_attention_lists_unverified_and_stale_domains(client, staff_owner, org):
    import datetime as dt

    from django.utils import timezone

    from owlat.domains.attention import domain_attention

    Domain.objects.create(organization=org, domain="pending.test")
    Domain.objects.create(
        organization=org,
        domain="old.test",
        status="verified",
        last_verified_at=timezone.now() - dt.timedelta(hours=30),
    )
    Domain.objects.create(
        organization=org, domain="fresh.test", status="verified", last_verified_at=timezone.now()
    )
    other = organization_create(name="Other")
    Domain.objects.create(organization=other, domain="elsewhere.test")
    titles = [item.title for item in domain_attention(org.pk)]
    assert titles == [
        "1 sending domain(s) not verified",
        "1 sending domain(s) with a stale verification (older than 24 h)",
    ]
    html = client.get(reverse("admin:index")).content.decode()
    assert "1 sending domain(s) not verified" in html and "stale verification" in html
