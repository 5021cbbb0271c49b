"""Operator flows in a real browser: log in and see the dashboard, create and publish a template, build a
segment with the condition builder and read its live count."""

from __future__ import annotations

import pytest

from tests.browser.conftest import login, screenshot

pytestmark = pytest.mark.django_db(transaction=True)


def test_log_in_and_see_the_dashboard(page, live_server, operator):
    login(page, live_server)
    assert page.url.rstrip("/").endswith("/admin")
    body = page.inner_text("body")
    assert "Acme" in body
    screenshot(page, "01-dashboard")


def test_create_and_publish_a_template(page, live_server, operator):
    from templates.models import EmailTemplate

    login(page, live_server)
    page.goto(f"{live_server.url}/admin/templates/emailtemplate/add/")
    page.fill("#id_name", "Welcome")
    page.fill("#id_subject", "Welcome, {{firstName|'friend'}}!")
    # a new template offers the block editor; raw HTML is behind "Or write raw HTML instead"
    page.locator("summary", has_text="Or write raw HTML instead").click()
    page.fill("#id_html_content", "<p>Hi {{firstName}}, welcome to Acme.</p>")
    # the language picker (a searchable multi-select, no JSON): German, then its subject and HTML
    page.locator("#id_supported_languages + .select2").click()
    page.keyboard.type("German")
    page.keyboard.press("Enter")
    page.click("[name=_continue]")
    page.wait_for_load_state()
    template = EmailTemplate.objects.get(name="Welcome")
    assert template.supported_languages == ["en", "de"]
    page.fill("#id_translation_de_subject", "Willkommen, {{firstName|'Freund'}}!")
    page.fill("#id_translation_de_html", "<p>Hallo {{firstName}}, willkommen bei Acme.</p>")
    page.click("[name=_continue]")
    page.wait_for_load_state()
    template.refresh_from_db()
    assert template.html_translations["de"]["subject"] == "Willkommen, {{firstName|'Freund'}}!"
    page.click("#template-status-form button[name=publish]")  # the Publish button of the change page
    page.wait_for_load_state()
    template.refresh_from_db()
    assert template.status == "published"
    assert (
        "/change/" in page.url and page.locator("#template-status-form button[name=unpublish]").count() == 1
    )
    screenshot(page, "02-template-published")


def test_build_a_segment_and_see_its_live_count(page, live_server, operator):
    from owlat.contacts import contact_find_or_create
    from owlat.models import ContactProperty, Segment

    org = operator["org"]
    ContactProperty.objects.create(organization=org, key="plan", label="Plan")
    for i, plan in enumerate(["pro", "Pro", "free"]):
        contact_find_or_create(
            organization_id=org.pk,
            email=f"c{i}@example.com",
            source="api",
            actor="t",
            properties={"plan": plan},
        )
    login(page, live_server)
    page.goto(f"{live_server.url}/admin/owlat/segment/add/")
    page.fill("#id_name", "Pro customers")
    page.click("text=Add a condition")
    row = page.locator(".owlat-condition-row").last
    row.locator("select[name$='-field']").select_option("plan")
    row.locator("select[name$='-operator']").select_option("equals")
    row.locator("input[name$='-value']").fill("pro")
    live = page.locator(".owlat-live-count")
    live.filter(has_text="2 contacts match now").wait_for()
    screenshot(page, "03-segment-builder-live-count")
    page.click("[name=_continue]")
    page.wait_for_load_state()
    segment = Segment.objects.get(name="Pro customers")
    assert segment.filters == {
        "logic": "AND",
        "conditions": [{"kind": "contact_property", "field": "plan", "operator": "equals", "value": "pro"}],
    }
    assert segment.cached_count == 2
    page.locator(".owlat-live-count").filter(has_text="2 contacts match now").wait_for()
    screenshot(page, "04-segment-saved")
