"""Tenant HTML in a real browser: a template whose script sets a flag and tries to create a superuser through the
admin with the reader's session. Platform staff open the campaign preview, the archive link, the template preview,
the review queue, the local outbox and an inbox message showing it: the flag stays unset in every window and
frame, no user is created, and every response carrying that HTML is a sandboxed document. The main admin pages
run under the site-wide policy without a single violation (unfold's scripts and ours still work)."""

from __future__ import annotations

import pytest

from owlat.sandbox import sandbox_violations
from tests.browser.conftest import PASSWORD, SCREENSHOTS, login, screenshot
from testsupport.hostile_html import EVIL_USERNAME, FLAG, MARKER, hostile_pages, hostile_world

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def staff_world(operator, django_user_model):
    django_user_model.objects.create_superuser("root", "root@example.com", PASSWORD)
    return hostile_world(operator["org"])


def _watch(page):
    """Every document response (pages and frames) and every console message about the policy."""
    documents, violations = [], []
    page.on("response", lambda r: documents.append(r) if r.request.resource_type == "document" else None)
    page.on(
        "console",
        lambda m: violations.append(m.text) if "Content Security Policy" in m.text else None,
    )
    return documents, violations


def test_tenant_script_never_runs_on_the_apps_origin(page, live_server, staff_world, django_user_model):
    documents, _ = _watch(page)
    login(page, live_server, "root")
    carrying = {}  # URL → the Content-Security-Policy of every document response that carried the tenant's HTML
    for number, (screen, (url, document)) in enumerate(hostile_pages(staff_world).items(), start=1):
        documents.clear()
        page.goto(live_server.url + url)
        page.wait_for_load_state("networkidle")
        page.wait_for_timeout(300)  # time for a script's fetches, had it run
        frames = page.frames
        if url != document:  # framed: the frame is there and shows the tenant's content
            assert len(frames) > 1, screen
            frames[1].locator(f"#{MARKER}").wait_for()
        else:
            page.locator(f"#{MARKER}").wait_for()
        for frame in frames:
            assert frame.evaluate(f"window.{FLAG}") is None, (screen, frame.url)
        for response in documents:  # read before the next navigation
            if response.ok and f'id="{MARKER}"' in response.text():
                carrying[response.url] = response.header_value("content-security-policy")
        assert any(u.endswith(document) for u in carrying), (screen, list(carrying))
        screenshot(page, f"sandbox-{number:02d}-{screen.replace(' ', '-')}")
    assert page.evaluate(f"localStorage.getItem('{FLAG}')") is None
    assert not django_user_model.objects.filter(username=EVIL_USERNAME).exists()
    for response_url, policy in carrying.items():
        assert sandbox_violations(policy) == [], response_url


MAIN_PAGES = (
    ("dashboard", "/admin/"),
    ("contacts", "/admin/owlat/contact/"),
    ("segment-add", "/admin/owlat/segment/add/"),
    ("templates", "/admin/templates/emailtemplate/"),
    ("campaign-add", "/admin/campaigns/campaign/add/"),
    ("automation-add", "/admin/automations/automation/add/"),
    ("inbox", "/admin/inbox/inboundmessage/"),
    ("organization", None),
    ("schedules", "/admin/django_q/schedule/"),
    ("api-docs", "/api/v1/docs"),
    ("api-redoc", "/api/v1/redoc"),
)
RENDERED = {"api-docs": ".swagger-ui .info", "api-redoc": ".api-content"}  # their scripts built the page


def test_the_main_admin_pages_work_under_the_site_policy(page, live_server, operator, django_user_model):
    from owlat.organizations import organization_create

    django_user_model.objects.create_superuser("root", "root@example.com", PASSWORD)
    organization_create(name="Beta")
    _documents, violations = _watch(page)
    login(page, live_server, "root")
    for name, url in MAIN_PAGES:
        if url is None:
            url = f"/admin/owlat/organization/{operator['org'].pk}/change/"
        response = page.goto(live_server.url + url)
        page.wait_for_load_state()
        assert "script-src 'self'" in response.header_value("content-security-policy"), name
        if name in RENDERED:
            page.locator(RENDERED[name]).first.wait_for(timeout=90_000)
            SCREENSHOTS.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(SCREENSHOTS / f"csp-{name}.png"))  # the top: the whole page is very long
            continue
        screenshot(page, f"csp-{name}")
    # our organization switch (a nonce'd listener, no inline handler) still submits on change
    page.goto(live_server.url + "/admin/")
    with page.expect_navigation():
        page.select_option("#owlat-active-organization", label="Beta")
    assert "Active organization: Beta." in page.inner_text("body")
    assert violations == [], "\n".join(violations)
