"""Issue 11, done when: a new organization, created in the admin, verifies its domain against a stand-in DNS,
sends, receives a bounce over SMTP and sees the address suppressed.

Real processes throughout: the worker clusters and the due-task dispatcher (`workers`), the bounce intake
(`manage.py run_bounce_server`, started here as the Procfile starts it), an SMTP server on loopback standing in
for the recipient's mail server (`smtp_sink`) and a loopback DNS server standing in for the Internet's
(`dns_stand_in`). The bounce travels the way a remote MTA would send it: to the message's envelope sender (the
VERP return path), routed by the DNS records the operator was told to publish (return-path CNAME → bounce
domain MX → address).
"""

from __future__ import annotations

import contextlib
import smtplib
import subprocess
import sys
import time
from pathlib import Path

import pytest
from django.urls import reverse

from delivery import verp
from delivery.models import TransactionalSend
from owlat.domains.resolver import lookup
from owlat.models import BlockedEmail, Domain, Organization, OrganizationSettings
from templates.models import TransactionalEmail
from testsupport import BASE_DIR, worker_environment
from testsupport.api import ApiClient, make_key
from testsupport.waiting import free_port

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

BOUNCE_DOMAIN = "bounce-intake.owlat.test"  # the installation's bounce host (BOUNCE_DOMAIN)
BOUNCE_MX = "mx.owlat.test"
SAMPLE = Path(BASE_DIR) / "delivery" / "tests" / "bounce_samples" / "hard_postfix_dsn.eml"


@pytest.fixture
def worker_env(dns_stand_in, settings):
    settings.BOUNCE_DOMAIN = BOUNCE_DOMAIN
    return {"BOUNCE_DOMAIN": BOUNCE_DOMAIN}


@pytest.fixture
def bounce_intake_process(worker_env, tmp_path):
    """`manage.py run_bounce_server` on a free port, on the test database; stopped (this process only) after."""
    port = free_port()
    log = (tmp_path / "bounces.log").open("wb")
    proc = subprocess.Popen(
        [sys.executable, str(BASE_DIR / "manage.py"), "run_bounce_server", "--port", str(port)],
        cwd=BASE_DIR,
        env=worker_environment(worker_env),
        stdout=log,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            assert proc.poll() is None, (tmp_path / "bounces.log").read_text()
            try:
                with smtplib.SMTP("127.0.0.1", port, timeout=2) as probe:
                    probe.noop()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)
        yield port
    finally:
        proc.terminate()
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=10)
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=5)
        log.close()


def _admin_create_organization(client, name: str) -> Organization:
    add = reverse("admin:owlat_organization_add")
    page = client.get(add)
    data = {"name": name, "postal_address": "Nimbus GmbH\nWolkenweg 7\n10115 Berlin"}
    for inline in page.context["inline_admin_formsets"]:  # memberships, invitations: none added here
        prefix = inline.formset.prefix
        data.update(
            {
                f"{prefix}-TOTAL_FORMS": "0",
                f"{prefix}-INITIAL_FORMS": "0",
                f"{prefix}-MIN_NUM_FORMS": "0",
                f"{prefix}-MAX_NUM_FORMS": "1000",
            }
        )
    response = client.post(add, data)
    assert response.status_code == 302, response.content.decode()[:3000]
    return Organization.objects.get(name=name)


def _mx_route(domain: str) -> str:
    """Where a remote MTA delivers mail for `domain`: follow the CNAME, take the MX, resolve its address."""
    cname = lookup(domain, "CNAME")
    target = cname.values[0] if cname.values else domain
    mx = lookup(target, "MX")
    assert mx.values, f"no MX for {target}: {mx.detail}"
    host = mx.values[0].split()[-1]
    address = lookup(host, "A")
    assert address.values, f"no address for {host}: {address.detail}"
    return address.values[0]


def test_new_organization_verifies_sends_bounces_and_is_suppressed(
    client, django_user_model, dns_stand_in, smtp_sink, workers, bounce_intake_process
):
    # Given platform staff creates an organization in the admin and switches to it
    root = django_user_model.objects.create_superuser(username="root", password="pw")
    client.force_login(root)
    org = _admin_create_organization(client, "Nimbus")
    client.post(reverse("admin:owlat_switch_organization"), {"organization": str(org.pk)})

    # and adds its sending domain, publishes what the page lists, and checks it against the stand-in DNS
    response = client.post(reverse("admin:owlat_domain_add"), {"domain": "nimbus.test", "provider_type": ""})
    assert response.status_code == 302, response.content.decode()[:2000]
    domain = Domain.objects.get(organization=org, domain="nimbus.test")
    assert domain.status == "pending"
    return_path = next(r for r in domain.dns_records if r["key"] == "return_path")
    assert (return_path["name"], return_path["value"]) == ("bounces.nimbus.test", BOUNCE_DOMAIN)
    dns_stand_in.publish(domain.dns_records)
    dns_stand_in.set(BOUNCE_DOMAIN, "MX", [f"10 {BOUNCE_MX}"])  # the installation's own bounce MX
    dns_stand_in.set(BOUNCE_MX, "A", ["127.0.0.1"])
    page = client.post(reverse("admin:owlat_domain_check", args=[domain.pk]), follow=True).content.decode()
    assert "nimbus.test is verified." in page
    domain.refresh_from_db()
    assert domain.status == "verified"

    # When it sends its first transactional email (sender and template set up; API key for the call)
    OrganizationSettings.objects.filter(organization=org).update(
        default_from_email="hello@nimbus.test", default_from_name="Nimbus"
    )
    welcome = TransactionalEmail.objects.create(
        organization=org, slug="welcome", name="Welcome", subject="Welcome", html_content="<p>Hello!</p>"
    )
    TransactionalEmail.objects.filter(pk=welcome.pk).update(status="published")
    _, raw_key = make_key(org, ["transactional:send", "transactional:read"])
    api = ApiClient(raw_key)
    r = api.post("/transactional", {"email": "ghost@example.com", "slug": "welcome"})
    assert r.status_code == 202, r.content
    send_id = r.json()["data"]["transactionalEmailId"]

    # Then the recipient's server receives it with the row's VERP return path at the sending domain
    [message] = smtp_sink.wait_for(1, timeout=30)
    assert message["From"] == "Nimbus <hello@nimbus.test>"
    assert message.mail_from.endswith("@bounces.nimbus.test")
    assert verp.parse_verp(message.mail_from) == ("transactional", send_id)
    send = workers.wait_until(lambda: TransactionalSend.objects.filter(pk=send_id, status="sent").first())

    # When that server bounces it (a Postfix DSN, user unknown) to the return path, routed through DNS
    raw = (
        SAMPLE.read_text()
        .replace("{verp}", message.mail_from)
        .replace("{rcpt}", "ghost@example.com")
        .replace("{message_id}", message["Message-ID"])
        .replace("\n", "\r\n")
    )
    host = _mx_route(message.mail_from.rpartition("@")[2])
    assert host == "127.0.0.1"
    with smtplib.SMTP(host, bounce_intake_process, timeout=10) as mta:
        assert mta.sendmail("", [message.mail_from], raw.encode()) == {}

    # Then the send is bounced (hard) and the address suppressed
    send = workers.wait_until(lambda: TransactionalSend.objects.filter(pk=send_id, status="bounced").first())
    assert send.bounce_type == "hard" and "5.1.1" in (send.error_message or "")
    blocked = BlockedEmail.objects.get(organization=org, email="ghost@example.com")
    assert (blocked.reason, blocked.bounce_type) == ("bounced", "hard")

    # and the organization sees it in the admin's suppression list, and a new send to it is refused
    listing = client.get(reverse("admin:owlat_blockedemail_changelist")).content.decode()
    assert "ghost@example.com" in listing
    r = api.post("/transactional", {"email": "ghost@example.com", "slug": "welcome"})
    assert r.status_code == 422 and "blocked" in r.content.decode()
    time.sleep(0.5)
    assert smtp_sink.count_for("ghost@example.com") == 1
