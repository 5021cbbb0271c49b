"""The security screens as an operator sees them: the inbound secret on the agent configuration (an owner sees
it and rotates it after confirming; an admin sees only its hint), an internal knowledge entry, and the CSV
import refusing a file over the row limit."""

from __future__ import annotations

import pytest

from tests.browser.conftest import PASSWORD, login, screenshot

pytestmark = pytest.mark.django_db(transaction=True)


def test_an_owner_rotates_the_inbound_secret_and_an_admin_never_sees_it(
    page, live_server, operator, django_user_model
):
    from inbox.models import AgentConfig
    from owlat.models import Membership

    config, _ = AgentConfig.objects.get_or_create(organization=operator["org"])
    secret = config.inbound_secret
    login(page, live_server)
    page.goto(f"{live_server.url}/admin/inbox/agentconfig/{config.pk}/change/")
    assert secret in page.inner_text("body")
    screenshot(page, "40-agent-config-owner-sees-secret")
    page.click("text=Rotate inbound secret…")
    assert "stops working at once" in page.inner_text("body")
    screenshot(page, "41-rotate-inbound-secret-confirm")
    page.click("text=Yes, rotate the secret")
    page.wait_for_load_state()
    new = page.inner_text("#new-inbound-secret")
    assert new != secret and new == AgentConfig.objects.get(pk=config.pk).inbound_secret
    screenshot(page, "42-rotate-inbound-secret-done")

    admin = django_user_model.objects.create_user(username="adam", password=PASSWORD, is_staff=True)
    Membership.objects.create(user=admin, organization=operator["org"], role="admin")
    page.context.clear_cookies()
    login(page, live_server, username="adam")
    page.goto(f"{live_server.url}/admin/inbox/agentconfig/{config.pk}/change/")
    body = page.inner_text("body")
    assert new not in body and "Authorization: Bearer" in body and "only owners see it" in body
    screenshot(page, "43-agent-config-admin-sees-hint")


def test_an_internal_knowledge_entry_and_a_refused_import(page, live_server, operator, tmp_path, settings):
    login(page, live_server)
    page.goto(f"{live_server.url}/admin/inbox/knowledgeentry/add/")
    page.fill("#id_title", "Refund escalation")
    page.fill("#id_content", "Refunds above 500 EUR need Petra's approval.")
    page.check("#id_is_internal")
    assert "never in a reply that can be sent automatically" in page.inner_text("body")
    screenshot(page, "44-knowledge-entry-internal")
    page.click("[name=_save]")
    page.wait_for_load_state()
    from inbox.models import KnowledgeEntry

    assert KnowledgeEntry.objects.get(title="Refund escalation").is_internal

    settings.IMPORT_MAX_ROWS = 2
    csv_file = tmp_path / "contacts.csv"
    csv_file.write_text("email\n" + "".join(f"u{i}@example.com\n" for i in range(3)))
    page.goto(f"{live_server.url}/admin/owlat/contact/import/")
    page.set_input_files("#id_file", str(csv_file))
    page.click(".owlat-submit")
    page.wait_for_load_state()
    assert "more than 2 rows (IMPORT_MAX_ROWS)" in page.inner_text("body")
    screenshot(page, "45-import-over-row-limit")
