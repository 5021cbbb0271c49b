"""Published records stay valid when the installation's host is an IP address (the default SITE_URL): SPF
authorizes it with `ip4:`/`ip6:` (an IP in `a:` is invalid), and the return-path domain becomes an A/AAAA record
(a CNAME cannot point at an IP) that the DNS check verifies."""

from __future__ import annotations

import pytest

from owlat.domains import records as rec
from owlat.domains.verification import domain_check, domain_register
from owlat.models import Domain
from owlat.tests.factories import make_org

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    ("site", "spf", "rp_type", "rp_value"),
    [
        ("http://127.0.0.1:8000", "ip4:127.0.0.1", "A", "127.0.0.1"),
        ("http://[2001:db8::5]:8000", "ip6:2001:db8::5", "AAAA", "2001:db8::5"),
        ("https://owlat.example.net", "a:owlat.example.net", "CNAME", "owlat.example.net"),
    ],
)
def test_records_for_an_ip_host_and_a_name(settings, site, spf, rp_type, rp_value):
    settings.SITE_URL, settings.DOMAIN_SPF_MECHANISM, settings.BOUNCE_DOMAIN = site, "", ""
    records = {r["key"]: r for r in rec.expected_records("acme.test", "tok", [])}
    assert records["spf"]["value"] == f"v=spf1 {spf} ~all"
    assert (records["return_path"]["type"], records["return_path"]["value"]) == (rp_type, rp_value)


def test_an_ip_host_domain_verifies_with_the_address_record(settings, dns_stand_in):
    settings.SITE_URL, settings.DOMAIN_SPF_MECHANISM, settings.BOUNCE_DOMAIN = "http://127.0.0.1:8000", "", ""
    domain = Domain.objects.create(organization=make_org("Acme"), domain="acme.test")
    domain_register(domain, actor="user:1")
    domain.refresh_from_db()
    dns_stand_in.publish(domain.dns_records)
    assert domain_check(domain, actor="user:1").to_state == "verified"
    domain.refresh_from_db()
    assert domain.dns_checks["return_path"]["state"] == "ok"
    dns_stand_in.set("bounces.acme.test", "A", ["192.0.2.1"])
    domain_check(domain, actor="user:1")
    domain.refresh_from_db()
    assert domain.dns_checks["return_path"] == {
        **domain.dns_checks["return_path"],
        "state": "wrong",
        "detail": "The A record must be 127.0.0.1.",
    }
