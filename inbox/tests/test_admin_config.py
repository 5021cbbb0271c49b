"""Admin side of the agent configuration: the feature-flags page refuses to switch `ai` on without a model provider
(AGT-30), and the agent configuration / handling rule screens apply the same rules as the API
(`inbox.configuration`)."""

from __future__ import annotations

import pytest
from django.urls import reverse

from inbox.models import AgentConfig, HandlingRule
from inbox.provider_settings import forget
from owlat.flags import AI_NEEDS_PROVIDER, flag_enabled
from owlat.models import AuditLog, Membership, OrganizationSettings
from testsupport.onboarding import form_data

pytestmark = pytest.mark.django_db


@pytest.fixture
def owner(client, django_user_model, org):
    user = django_user_model.objects.create_user(username="ann", password="pw", is_staff=True)
    Membership.objects.create(user=user, organization=org, role="owner")
    client.force_login(user)
    forget()
    yield client
    forget()


def _settings_page(org):
    row = OrganizationSettings.objects.get(organization=org)
    return row, reverse("admin:owlat_organizationsettings_change", args=[row.pk])


def test_turning_ai_on_without_a_model_provider_is_refused(owner, org, settings):
    settings.LLM_PROVIDER = ""
    row, url = _settings_page(org)
    data = form_data(owner.get(url))
    data["flag:ai"] = "on"
    response = owner.post(url, data)
    # refused: the form comes back with the error on the ai checkbox, nothing is stored
    assert response.status_code == 200
    form = response.context["adminform"].form
    assert form.errors["flag:ai"] == [AI_NEEDS_PROVIDER]
    assert "Inbox → Model providers" in response.content.decode()
    row.refresh_from_db()
    assert not row.feature_flags.get("ai") and not flag_enabled(org.pk, "ai")


def test_turning_ai_on_with_the_organizations_own_provider_is_allowed(owner, org, settings):
    from inbox.configuration import provider_setting_save

    settings.LLM_PROVIDER = ""
    provider_setting_save(organization_id=org.pk, provider="ollama", actor="test")
    row, url = _settings_page(org)
    data = form_data(owner.get(url))
    data["flag:ai"] = "on"
    response = owner.post(url, data)
    assert response.status_code == 302, response.context["adminform"].form.errors
    row.refresh_from_db()
    assert row.feature_flags["ai"] is True and flag_enabled(org.pk, "ai")


def test_a_stored_ai_flag_without_provider_does_not_block_other_edits(owner, org, settings):
    # ai was on while a provider existed; the provider went away: other settings can still be saved
    settings.LLM_PROVIDER = ""
    row, url = _settings_page(org)
    row.feature_flags = {**row.feature_flags, "ai": True}
    row.save()
    data = form_data(owner.get(url))
    assert data.get("flag:ai") == "on"
    data["default_from_name"] = "Acme Support"
    assert owner.post(url, data).status_code == 302
    row.refresh_from_db()
    assert row.default_from_name == "Acme Support" and not flag_enabled(org.pk, "ai")


def test_agent_config_form_uses_the_shared_rules_and_writer(owner, org, make_message, agent_config):
    url = reverse("admin:inbox_agentconfig_change", args=[agent_config.pk])
    data = form_data(owner.get(url))
    data.update({"working_hours_timezone": "Mars/Olympus", "coalesce_window_ms": "90000000"})
    response = owner.post(url, data)
    errors = response.context["adminform"].form.errors
    assert "working_hours_timezone" in errors and "coalesce_window_ms" in errors
    data.update({"working_hours_timezone": "Europe/Berlin", "coalesce_window_ms": "3000"})
    data["is_clarification_enabled"] = "on"
    assert owner.post(url, data).status_code == 302
    config = AgentConfig.objects.get(pk=agent_config.pk)
    assert config.coalesce_window_ms == 3000 and config.is_clarification_enabled
    assert AuditLog.objects.filter(organization_id=org.pk, action="inbox.agent_config_updated").exists()


def test_handling_rule_form_refuses_a_relabel_without_category(owner, org):
    url = reverse("admin:inbox_handlingrule_add")
    data = {
        "organization": str(org.pk),
        "name": "R",
        "match": "sender",
        "value": "a@b.test",
        "action": "relabel",
        "category": "",
        "position": "0",
        "is_active": "on",
    }
    response = owner.post(url, data)
    assert response.context["adminform"].form.errors["category"] == ["Pick the category to relabel to."]
    assert not HandlingRule.objects.exists()
    assert owner.post(url, {**data, "category": "billing"}).status_code == 302
    assert HandlingRule.objects.get().uid is not None


def test_an_imap_mailbox_is_added_in_the_admin_with_a_password_field_and_no_json(owner, org, settings):
    from inbox.models import ImapMailbox

    settings.OUTBOUND_ALLOWED_HOSTS = ["127.0.0.1"]  # a private IMAP server the operator allowed
    url = reverse("admin:inbox_imapmailbox_add")
    page = owner.get(url).content.decode()
    assert 'type="password"' in page and "<textarea" not in page
    assert "TLS from the start" in page  # the security picker
    data = {
        "organization": str(org.pk),
        "name": "Support",
        "host": "127.0.0.1",
        "port": "993",
        "security": "ssl",
        "username": "support@acme.test",
        "password": "s3cret-pass",
        "folder": "INBOX",
        "enabled": "on",
    }
    assert owner.post(url, data).status_code == 302
    mailbox = ImapMailbox.objects.get()
    assert mailbox.password_encrypted and "s3cret-pass" not in mailbox.password_encrypted
    change = owner.get(reverse("admin:inbox_imapmailbox_change", args=[mailbox.pk])).content.decode()
    assert "s3cret-pass" not in change and "not read yet" in change
