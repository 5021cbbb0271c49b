"""The raw inbound endpoint's secret travels in the Authorization header (never the URL), is blanked in logs,
hidden from everyone but owners in the admin, rotatable; failed guesses are throttled per client (429)."""

from __future__ import annotations

import base64
import io
import logging

import pytest
from django.test import Client

from inbox.models import AgentConfig, InboundMessage
from inbox.tests.test_receive import RAW
from owlat.models import AuditLog, Membership

pytestmark = pytest.mark.django_db


@pytest.fixture
def secret(org):
    return AgentConfig.objects.get_or_create(organization=org)[0].inbound_secret


def post(secret=None, *, path="/inbound/raw", auth=None, **extra):
    headers = (
        {"HTTP_AUTHORIZATION": auth if auth is not None else f"Bearer {secret}"} if (secret or auth) else {}
    )
    return Client().post(path, data=RAW, content_type="message/rfc822", **headers, **extra)


def test_the_secret_goes_in_a_bearer_header_or_basic_auth(org, secret):
    assert post(secret).status_code == 201
    basic = base64.b64encode(f"owlat:{secret}".encode()).decode()
    again = post(auth=f"Basic {basic}")
    assert again.status_code == 200 and again.json()["data"]["duplicate"] is True
    missing = post()
    assert missing.status_code == 401 and "Bearer" in missing["WWW-Authenticate"]


def test_the_secret_in_the_url_is_refused_without_being_used(org, secret):
    response = Client().post(f"/inbound/raw/{secret}", data=RAW, content_type="message/rfc822")
    assert response.status_code == 410
    assert (
        "Authorization: Bearer" in response.json()["error"]["message"]
        and "rotate" in response.json()["error"]["message"]
    )
    assert not InboundMessage.objects.exists()


def test_secrets_are_blanked_in_every_log_line(secret):
    # the console handler as settings.LOGGING installs it
    handler = next(
        h
        for h in logging.getLogger().handlers
        if any(type(f).__name__ == "RedactSecretsFilter" for f in h.filters)
    )
    stream, handler.stream = handler.stream, io.StringIO()
    try:
        # django.request writes 5xx lines only (settings.LOGGING): one carrying the secret in its path
        logging.getLogger("django.request").error("Internal Server Error: %s", f"/inbound/raw/{secret}")
        try:
            raise ValueError(f"bad key lm_live_{'a' * 40}")
        except ValueError:
            logging.getLogger("owlat").exception("failed")
        written = handler.stream.getvalue()
    finally:
        handler.stream = stream
    assert secret not in written and "inb_[redacted]" in written
    assert "lm_live_aaaa" not in written and "lm_live_[redacted]" in written


def _login(client, django_user_model, org, role):
    user = django_user_model.objects.create_user(username=role, password="pw", is_staff=True)
    Membership.objects.create(user=user, organization=org, role=role)
    client.force_login(user)
    return user


@pytest.mark.parametrize("role", ["admin", "editor"])
def test_only_owners_see_the_secret_in_the_admin(client, django_user_model, org, secret, role):
    config = AgentConfig.objects.get(organization=org)
    _login(client, django_user_model, org, role)
    page = client.get(f"/admin/inbox/agentconfig/{config.pk}/change/")
    assert page.status_code in (200, 403)
    assert secret not in page.content.decode()
    assert client.get(f"/admin/inbox/agentconfig/{config.pk}/rotate-secret/").status_code == 403
    assert client.post(f"/admin/inbox/agentconfig/{config.pk}/rotate-secret/").status_code == 403
    assert AgentConfig.objects.get(pk=config.pk).inbound_secret == secret


def test_an_owner_sees_the_secret_and_rotates_it_after_confirming(client, django_user_model, org, secret):
    config = AgentConfig.objects.get(organization=org)
    _login(client, django_user_model, org, "owner")
    page = client.get(f"/admin/inbox/agentconfig/{config.pk}/change/").content.decode()
    assert secret in page and "Rotate inbound secret" in page
    confirm = client.get(f"/admin/inbox/agentconfig/{config.pk}/rotate-secret/").content.decode()
    assert "stops working at once" in confirm
    assert AgentConfig.objects.get(pk=config.pk).inbound_secret == secret  # asking changes nothing
    done = client.post(f"/admin/inbox/agentconfig/{config.pk}/rotate-secret/").content.decode()
    new = AgentConfig.objects.get(pk=config.pk).inbound_secret
    assert new != secret and new in done
    assert AuditLog.objects.filter(action="inbox.inbound_secret_rotated", organization=org).exists()
    assert post(secret).status_code == 401
    assert post(new).status_code == 201


# --- per-client throttling of failed lookups -------------------------------------------------------------------


def test_failed_inbound_secret_guesses_are_throttled_per_client(org, secret, settings):
    settings.AUTH_FAILURE_BURST = 3
    codes = [post(f"inb_guess{i:030d}").status_code for i in range(4)]
    assert codes == [401, 401, 401, 429]
    throttled = post(secret)  # even the right secret: no lookup while throttled
    assert throttled.status_code == 429 and int(throttled["Retry-After"]) >= 1
    assert throttled.json()["error"]["retryAfter"] == int(throttled["Retry-After"])
    assert not InboundMessage.objects.exists()
    assert post(secret, REMOTE_ADDR="203.0.113.9").status_code == 201  # another client is not affected


def test_behind_trusted_proxies_the_forwarded_address_is_the_client(org, secret, settings):
    settings.AUTH_FAILURE_BURST = 1
    settings.TRUSTED_PROXY_COUNT = 1
    assert post("inb_" + "x" * 30, HTTP_X_FORWARDED_FOR="198.51.100.1").status_code == 401
    assert post("inb_" + "x" * 30, HTTP_X_FORWARDED_FOR="198.51.100.1").status_code == 429
    # a client cannot escape by writing its own X-Forwarded-For entries: the proxy's entry is the last one
    assert post("inb_" + "x" * 30, HTTP_X_FORWARDED_FOR="1.2.3.4, 198.51.100.1").status_code == 429
    assert post(secret, HTTP_X_FORWARDED_FOR="198.51.100.2").status_code == 201
