"""Sending-domain verification (DOM-12, DOM-20, issue 11 item 1) against the loopback DNS stand-in
(testsupport.dns): verified, missing, wrong and partial records; DNS errors; the staff override; stale warnings;
the `verify_domains` command and the cron schedule."""

from __future__ import annotations

import datetime as dt
import io
import subprocess
import sys

import pytest
from django.core.management import CommandError, call_command
from django.utils import timezone

from owlat.domains import records as rec
from owlat.domains.lifecycle import domain_transition
from owlat.domains.verification import (
    domain_check,
    domain_override,
    domain_register,
    domains_recheck,
    is_stale,
    stale_warning,
)
from owlat.models import AuditLog, DkimKey, Domain
from owlat.tests.factories import make_org

pytestmark = pytest.mark.django_db


@pytest.fixture
def domain(settings):
    settings.SITE_URL = "https://owlat.example.net"
    settings.DOMAIN_SPF_MECHANISM = ""
    settings.BOUNCE_DOMAIN = ""
    org = make_org("Acme")
    domain = Domain.objects.create(organization=org, domain="acme.test")
    outcome = domain_register(domain, actor="user:1")
    assert outcome.ok and outcome.to_state == "pending"
    domain.refresh_from_db()
    return domain


def by_key(domain: Domain) -> dict[str, dict]:
    return {r["key"]: r for r in domain.dns_records}


def test_registration_fills_exactly_the_records_to_publish(domain):
    key = DkimKey.objects.get(domain=domain)
    records = by_key(domain)
    assert list(records) == ["ownership", "spf", f"dkim:{key.selector}", "dmarc", "return_path"]
    assert records["ownership"]["name"] == "_owlat.acme.test"
    assert records["ownership"]["value"] == f"owlat-verification={domain.verification_token}"
    assert len(domain.verification_token) == 32
    assert records["spf"] == {**records["spf"], "type": "TXT", "name": "acme.test"}
    assert records["spf"]["value"] == "v=spf1 a:owlat.example.net ~all"
    assert records[f"dkim:{key.selector}"]["name"] == f"{key.selector}._domainkey.acme.test"
    assert records[f"dkim:{key.selector}"]["value"] == f"v=DKIM1; k=rsa; p={key.public_key}"
    assert records["dmarc"]["name"] == "_dmarc.acme.test" and records["dmarc"]["value"].startswith("v=DMARC1")
    assert records["return_path"] == {
        **records["return_path"],
        "type": "CNAME",
        "name": "bounces.acme.test",
        "value": "owlat.example.net",
    }
    assert AuditLog.objects.filter(action="domain.registered", resource_id=str(domain.pk)).count() == 1
    # registering again is a no-op
    assert domain_register(domain, actor="user:1").applied == "duplicate"
    assert DkimKey.objects.filter(domain=domain).count() == 1


def test_all_records_published_verifies(domain, dns_stand_in):
    dns_stand_in.publish(domain.dns_records)
    outcome = domain_check(domain, actor="user:1")
    assert (outcome.ok, outcome.from_state, outcome.to_state) == (True, "pending", "verified")
    domain.refresh_from_db()
    assert domain.status == "verified" and domain.last_verified_at and domain.last_checked_at
    assert {k: v["state"] for k, v in domain.dns_checks.items()} == dict.fromkeys(by_key(domain), "ok")
    assert DkimKey.objects.get(domain=domain).verified_at is not None
    assert AuditLog.objects.filter(action="domain.verified", resource_id=str(domain.pk)).exists()
    # the queries went to the stand-in, for every record
    asked = {name for name, _ in dns_stand_in.queries}
    assert {r["name"] for r in domain.dns_records} <= asked


def test_nothing_published_fails_with_every_record_missing(domain, dns_stand_in):
    outcome = domain_check(domain, actor="user:1")
    assert (outcome.ok, outcome.to_state) == (True, "failed")
    domain.refresh_from_db()
    assert {v["state"] for v in domain.dns_checks.values()} == {"missing"}
    assert domain.last_verified_at is None
    audit = AuditLog.objects.get(action="domain.verification_failed", resource_id=str(domain.pk))
    assert audit.organization_id == domain.organization_id


def test_partial_records_fail_and_show_which_are_missing(domain, dns_stand_in):
    dns_stand_in.publish(domain.dns_records, skip=["dmarc", "return_path"])
    assert domain_check(domain, actor="user:1").to_state == "failed"
    domain.refresh_from_db()
    states = {k: v["state"] for k, v in domain.dns_checks.items()}
    assert states.pop("dmarc") == "missing" and states.pop("return_path") == "missing"
    assert set(states.values()) == {"ok"}
    # publishing the rest verifies on the next check (failed → verified)
    dns_stand_in.publish([r for r in domain.dns_records if r["key"] in ("dmarc", "return_path")])
    assert domain_check(domain, actor="user:1").to_state == "verified"


@pytest.mark.parametrize(
    ("key", "name", "rdtype", "values", "detail"),
    [
        ("ownership", "_owlat.acme.test", "TXT", ["owlat-verification=somebody-else"], "must be exactly"),
        ("spf", "acme.test", "TXT", ["v=spf1 include:_spf.other.example -all"], "does not contain a:owlat"),
        ("spf", "acme.test", "TXT", ["v=spf1 a:owlat.example.net ~all", "v=spf1 mx -all"], "More than one"),
        ("dmarc", "_dmarc.acme.test", "TXT", ["v=DMARC1; rua=mailto:x@acme.test"], "needs a policy"),
        (
            "return_path",
            "bounces.acme.test",
            "CNAME",
            ["mx.other.example"],
            "must point to owlat.example.net",
        ),
    ],
)
def test_a_wrong_record_fails_with_what_to_fix(domain, dns_stand_in, key, name, rdtype, values, detail):
    dns_stand_in.publish(domain.dns_records, skip=[key])
    dns_stand_in.set(name, rdtype, values)
    assert domain_check(domain, actor="user:1").to_state == "failed"
    domain.refresh_from_db()
    assert domain.dns_checks[key]["state"] == "wrong"
    assert detail in domain.dns_checks[key]["detail"]
    assert domain.dns_checks[key]["found"]
    assert all(v["state"] == "ok" for k, v in domain.dns_checks.items() if k != key)


def test_a_wrong_dkim_key_fails(domain, dns_stand_in):
    selector = DkimKey.objects.get(domain=domain).selector
    dns_stand_in.publish(domain.dns_records, skip=[f"dkim:{selector}"])
    dns_stand_in.set(
        f"{selector}._domainkey.acme.test", "TXT", ["v=DKIM1; k=rsa; p=MIIBIjANBgkqhkiG9w0BAQEFAAOC"]
    )
    assert domain_check(domain, actor="user:1").to_state == "failed"
    domain.refresh_from_db()
    assert domain.dns_checks[f"dkim:{selector}"]["state"] == "wrong"
    assert DkimKey.objects.get(domain=domain).verified_at is None


def test_an_existing_spf_record_that_includes_the_mechanism_is_accepted(domain, dns_stand_in):
    dns_stand_in.publish(domain.dns_records, skip=["spf"])
    dns_stand_in.set(
        "acme.test", "TXT", ["google-site-verification=x", "v=spf1 mx +a:owlat.example.net -all"]
    )
    assert domain_check(domain, actor="user:1").to_state == "verified"


def test_dns_errors_change_nothing_and_a_verified_domain_goes_stale(domain, dns_stand_in):
    dns_stand_in.publish(domain.dns_records)
    assert domain_check(domain, actor="user:1").to_state == "verified"
    dns_stand_in.servfail.update({"acme.test", "_owlat.acme.test", "_dmarc.acme.test", "bounces.acme.test"})
    dns_stand_in.silent.add(f"{DkimKey.objects.get(domain=domain).selector}._domainkey.acme.test")
    outcome = domain_check(domain, actor="user:1")
    assert (outcome.ok, outcome.from_state, outcome.to_state) == (True, "verified", "verified")
    domain.refresh_from_db()
    assert {v["state"] for v in domain.dns_checks.values()} == {"error"}
    assert not is_stale(domain)
    later = timezone.now() + dt.timedelta(hours=25)
    assert is_stale(domain, later)
    assert "is stale" in stale_warning(domain, later) and "Check now" in stale_warning(domain, later)


def test_records_removed_from_a_verified_domain_fail_it(domain, dns_stand_in):
    dns_stand_in.publish(domain.dns_records)
    domain_check(domain, actor="user:1")
    dns_stand_in.remove("_owlat.acme.test")
    outcome = domain_check(domain, actor="system:domain-recheck")
    assert (outcome.from_state, outcome.to_state) == ("verified", "failed")


def test_staff_override_verifies_without_dns_and_is_audited(domain, dns_stand_in):
    outcome = domain_override(domain, actor="user:7", reason="local setup")
    assert (outcome.ok, outcome.to_state) == (True, "verified")
    audit = AuditLog.objects.get(action="domain.verification_overridden", resource_id=str(domain.pk))
    assert audit.user_id == "user:7" and audit.details["reason"] == "local setup"
    domain.refresh_from_db()
    assert domain.verification_overridden_at and not is_stale(domain, timezone.now() + dt.timedelta(days=3))
    # the re-check does not undo an override when the records are not published ...
    assert domain_check(domain, actor="system:domain-recheck").to_state == "verified"
    # ... and a second override is refused
    again = domain_override(domain, actor="user:7")
    assert not again.ok and again.message == "The domain is already verified."


def test_the_lifecycle_refuses_illegal_moves(domain):
    bad = domain_transition(
        domain, "verified", actor="x", input={"event": "check", "verdict": "bad", "checks": {}}
    )
    assert not bad.ok and bad.reason == "illegal_edge"
    unknown = domain_transition(domain, "failed", actor="x", input={"event": "nonsense"})
    assert not unknown.ok and unknown.reason == "unknown_event"
    domain.refresh_from_db()
    assert domain.status == "pending"


def test_recheck_registers_checks_and_reports(domain, dns_stand_in):
    other = Domain.objects.create(organization=domain.organization, domain="other.test")
    dns_stand_in.publish(domain.dns_records)
    summary = domains_recheck()
    assert summary.checked == 2
    assert "acme.test: pending → verified" in summary.lines()
    other.refresh_from_db()
    assert other.status == "failed" and other.dns_records  # registered on the way, then checked


def test_verify_domains_command(domain, dns_stand_in):
    dns_stand_in.publish(domain.dns_records)
    out = io.StringIO()
    call_command("verify_domains", "--domain", "ACME.test", stdout=out)
    assert "acme.test: pending → verified" in out.getvalue()
    assert "1 domain(s) checked" in out.getvalue()
    with pytest.raises(CommandError, match='No sending domain "nope.test"'):
        call_command("verify_domains", "--domain", "nope.test")
    with pytest.raises(CommandError, match="Unknown organization|No organization"):
        call_command("verify_domains", "--organization", "No Such Org")


def test_verify_domains_bad_argument_is_one_line():
    proc = subprocess.run(
        [sys.executable, "manage.py", "verify_domains", "--domain", "not a domain"],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 2
    assert (
        proc.stderr.strip()
        .splitlines()[-1]
        .endswith("'not a domain' is not a domain name (expected e.g. mail.example.com)")
    )
    assert "Traceback" not in proc.stderr


def test_the_recheck_is_a_declared_schedule():
    from owlat.schedules import collect_schedules

    spec = next(s for s in collect_schedules() if s.name == "recheck sending domains")
    assert spec.func_path == "owlat.domains.verification.domains_recheck_task"


def test_the_return_path_points_at_the_bounce_domain(settings):
    settings.BOUNCE_DOMAIN = "Bounces.Owlat.Example.NET."
    [record] = [r for r in rec.expected_records("acme.test", "t", []) if r["key"] == "return_path"]
    assert (record["type"], record["name"], record["value"]) == (
        "CNAME",
        "bounces.acme.test",
        "bounces.owlat.example.net",
    )


def test_domain_names_are_validated():
    assert rec.valid_domain_name("mail.example.com") and rec.valid_domain_name("xn--bcher-kva.example")
    assert not rec.valid_domain_name("localhost") and not rec.valid_domain_name("bad_name.example")


def test_one_broken_domain_does_not_stop_the_recheck(domain, dns_stand_in, monkeypatch):
    from owlat.domains import verification

    Domain.objects.create(organization=domain.organization, domain="zzz.test")
    real = verification.domain_check

    def flaky(d, *, actor):
        if d.domain == "acme.test":
            raise RuntimeError("boom")
        return real(d, actor=actor)

    monkeypatch.setattr(verification, "domain_check", flaky)
    summary = domains_recheck()
    assert summary.checked == 1
    assert "acme.test: the check failed (see the log)" in summary.lines()
    assert Domain.objects.get(domain="zzz.test").status == "failed"


def test_a_domain_from_before_verification_gets_its_token_and_key_on_the_first_check(dns_stand_in):
    org = make_org("Legacy")
    legacy = Domain.objects.create(organization=org, domain="legacy.test", status="verified")
    outcome = domain_check(legacy, actor="system:domain-recheck")
    legacy.refresh_from_db()
    assert legacy.verification_token and DkimKey.objects.filter(domain=legacy).count() == 1
    assert [r["key"].split(":")[0] for r in legacy.dns_records] == [
        "ownership",
        "spf",
        "dkim",
        "dmarc",
        "return_path",
    ]
    assert (outcome.from_state, outcome.to_state) == ("verified", "failed")  # nothing published
    dns_stand_in.publish(legacy.dns_records)
    assert domain_check(legacy, actor="system:domain-recheck").to_state == "verified"
