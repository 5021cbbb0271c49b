"""Tenant HTML is inert on the app's origin: every response carrying it is a sandboxed document (owlat.sandbox),
every page of ours frames it from such a response and carries the site-wide policy (django-csp), and the public
archive neither reads nor sets a cookie."""

from __future__ import annotations

import re

import pytest

from owlat.sandbox import sandbox_policy, sandbox_violations, sandboxed_frame
from testsupport.hostile_html import MARKER, hostile_pages, hostile_world

pytestmark = pytest.mark.django_db

RAW_SCRIPT = "window.__owlat_owned = true"


@pytest.fixture
def world(django_user_model):
    from owlat.organizations import organization_create

    org = organization_create(name="Acme")
    staff = django_user_model.objects.create_superuser("root", "root@example.com", "pw")
    return {**hostile_world(org), "org": org, "staff": staff}


def test_the_sandbox_policy_gives_no_script_no_same_origin_and_no_forms():
    policy = sandbox_policy()
    assert sandbox_violations(policy) == []
    assert "script-src 'none'" in policy and "default-src 'none'" in policy
    assert "https:" not in sandbox_policy(remote_content=False)  # inbound mail: nothing loads from its sender
    assert sandbox_violations("default-src 'self'") == ["no sandbox directive"]
    assert sandbox_violations("sandbox allow-scripts allow-same-origin") == [
        "sandbox grants allow-same-origin",
        "sandbox grants allow-scripts",
    ]


def test_a_sandboxed_frame_escapes_its_source_and_is_sandboxed():
    html = sandboxed_frame('/x?a=1&b="><script>', title="T")
    assert 'sandbox="allow-popups allow-popups-to-escape-sandbox"' in html
    assert "<script>" not in html and "&quot;&gt;&lt;script&gt;" in html


@pytest.mark.parametrize(
    "screen",
    ["campaign preview", "archive", "template preview", "review queue", "local outbox", "inbox message"],
)
def test_every_response_carrying_tenant_html_is_a_sandboxed_document(client, world, screen):
    client.force_login(world["staff"])
    page_url, document_url = hostile_pages(world)[screen]
    page = client.get(page_url)
    assert page.status_code == 200, page.content[:500]
    body = page.content.decode()
    if page_url != document_url:
        # our page: the tenant's HTML is not in it (not even escaped into srcdoc; a text rendering may be), only a
        # sandboxed frame of it
        assert f'id="{MARKER}"' not in body and f"id=&quot;{MARKER}" not in body and "srcdoc" not in body
        frame = re.search(r'<iframe class="owlat-sandboxed-frame" sandbox="([^"]*)" src="([^"]+)"', body)
        assert frame and frame.group(2).replace("&amp;", "&") == document_url
        assert sandbox_violations(f"sandbox {frame.group(1)}") == []
        assert sandbox_violations(page["Content-Security-Policy"]) == ["no sandbox directive"]  # the site's
        document = client.get(document_url)
    else:
        document = page
    assert document.status_code == 200
    assert RAW_SCRIPT in document.content.decode()  # shown as written, and inert:
    assert sandbox_violations(document["Content-Security-Policy"]) == []
    assert document["X-Frame-Options"] == "SAMEORIGIN" and document["Referrer-Policy"] == "no-referrer"
    if screen == "inbox message":
        assert "https:" not in document["Content-Security-Policy"]


def test_the_archive_reads_and_sets_no_cookie(client, world):
    from django.contrib.sessions.models import Session

    client.force_login(world["staff"])
    session = Session.objects.get()
    before = (session.session_data, session.expire_date)
    response = client.get(f"/archive?token={world['sent'].archive_token}")
    assert response.status_code == 200 and MARKER in response.content.decode()
    assert not response.cookies  # no session, CSRF or messages cookie
    assert "cookie" not in response.get("Vary", "").lower()  # the response does not depend on one
    session = Session.objects.get()
    assert (session.session_data, session.expire_date) == before  # the staff session was not even touched
    assert response.wsgi_request.COOKIES == {}


def test_every_page_of_ours_carries_the_site_policy_and_our_inline_scripts_its_nonce(client, world):
    client.force_login(world["staff"])
    page = client.get(f"/admin/campaigns/campaign/{world['sent'].pk}/change/")
    policy = page["Content-Security-Policy"]
    nonce = re.search(r"'nonce-([^']+)'", policy).group(1)
    scripts = re.findall(r"<script(?![^>]*\bsrc=)(?![^>]*application/json)([^>]*)>", page.content.decode())
    assert scripts and all(f'nonce="{nonce}"' in attrs for attrs in scripts)
    assert "object-src 'none'" in policy and "frame-ancestors 'self'" in policy
    assert "'unsafe-inline'" not in policy.split("script-src")[1].split(";")[0]
    for url in ("/admin/", "/admin/login/", "/api/v1/docs", "/api/v1/health", "/unsub/bad-token"):
        assert "script-src 'self'" in client.get(url)["Content-Security-Policy"], url
