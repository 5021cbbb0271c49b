"""AGT-30 in a real browser: ticking `ai` on the organization settings page while no model provider is configured
is refused with a message saying what to do; after adding the organization's own provider it is accepted."""

from __future__ import annotations

import pytest

from tests.browser.conftest import login, screenshot

pytestmark = pytest.mark.django_db(transaction=True)


def test_ai_flag_is_refused_until_a_model_provider_is_configured(page, live_server, operator, settings):
    from inbox.configuration import provider_setting_save
    from inbox.provider_settings import forget
    from owlat.flags import AI_NEEDS_PROVIDER, flag_enabled
    from owlat.models import OrganizationSettings

    settings.LLM_PROVIDER = ""
    forget()
    org = operator["org"]
    row = OrganizationSettings.objects.get(organization=org)
    change = f"{live_server.url}/admin/owlat/organizationsettings/{row.pk}/change/"
    login(page, live_server)

    page.goto(change)
    page.locator('input[name="flag:ai"]').check()
    page.click("[name=_save]")
    page.wait_for_load_state()
    # refused: still on the change page, the error beside the checkbox, nothing stored
    assert "/change/" in page.url
    assert AI_NEEDS_PROVIDER in page.inner_text("body")
    screenshot(page, "ai-flag-refused")
    row.refresh_from_db()
    assert not row.feature_flags.get("ai") and not flag_enabled(org.pk, "ai")

    provider_setting_save(organization_id=org.pk, provider="ollama", actor="test")
    forget()
    page.goto(change)
    page.locator('input[name="flag:ai"]').check()
    page.click("[name=_save]")
    page.wait_for_load_state()
    assert AI_NEEDS_PROVIDER not in page.inner_text("body")
    row.refresh_from_db()
    assert row.feature_flags["ai"] is True and flag_enabled(org.pk, "ai")
    screenshot(page, "ai-flag-accepted")
    forget()
