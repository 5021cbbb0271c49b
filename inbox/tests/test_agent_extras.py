"""Spec items beyond the core pipeline: burst coalescing (AGT-02), URL reputation in the security scan through
the outbound guard (AGT-13 layer 5), the reference monitor's link sanitizing for autonomous sends (AGT-22), and
an organization's own model provider set in the admin with its key encrypted (AGT-28)."""

from __future__ import annotations

import datetime as dt

import pytest
from django.core.cache import cache
from django.urls import reverse
from django.utils import timezone

from inbox.models import AgentConfig, InboundMessage, LlmProviderSetting
from inbox.provider_settings import decrypt_key, forget
from inbox.sending import sanitize_links, send_approved_reply
from owlat.jobs import dispatch_due_tasks
from owlat.models import Membership
from testsupport.http import Reply

pytestmark = pytest.mark.django_db


def _m(r) -> InboundMessage:
    return InboundMessage.objects.get(pk=r.message.pk)


# --- burst coalescing (AGT-02) ------------------------------------------------------------------------------


def test_a_burst_on_one_thread_gets_one_run(ai_org, llm_server, receive, run_pipeline):
    config, _ = AgentConfig.objects.get_or_create(organization=ai_org)
    config.coalesce_window_ms = 5000
    config.save()
    first = receive(subject="Order 17", text_body="Where is order 17?")
    second = receive(subject="Re: Order 17", text_body="Also, can you ship it to my office instead?")
    third = receive(subject="Order 17", text_body="Sorry, one more thing: please gift-wrap it.")
    assert first.message.thread_id == second.message.thread_id == third.message.thread_id
    run_pipeline()  # nothing runs before the window is over
    assert _m(third).processing_status == "received"
    assert [_m(r).processing_status for r in (first, second)] == ["archived", "archived"]
    assert _m(first).archive_reason == "coalesced"
    assert dispatch_due_tasks(now=timezone.now() + dt.timedelta(seconds=6)) == 3
    run_pipeline()
    assert _m(third).processing_status == "draft_ready"
    assert llm_server.count("classify") == 1 and llm_server.count("draft") == 1
    assert any("ship it to my office" in p and "gift-wrap" in p for p in llm_server.prompts())


def test_other_threads_are_not_coalesced(ai_org, llm_server, receive, run_pipeline):
    config, _ = AgentConfig.objects.get_or_create(organization=ai_org)
    config.coalesce_window_ms = 5000
    config.save()
    a = receive(subject="Invoice", text_body="Where is my invoice?")
    b = receive(subject="Password", text_body="How do I change my password?")
    dispatch_due_tasks(now=timezone.now() + dt.timedelta(seconds=6))
    run_pipeline()
    assert _m(a).processing_status == _m(b).processing_status == "draft_ready"


# --- URL reputation (AGT-13 layer 5) ------------------------------------------------------------------------


@pytest.fixture
def safe_browsing(settings, http_receiver):
    cache.clear()
    settings.GOOGLE_SAFE_BROWSING_API_KEY = "sb-key"
    settings.GOOGLE_SAFE_BROWSING_URL = f"{http_receiver.url}/v4/threatMatches:find"
    settings.OUTBOUND_ALLOWED_HOSTS = [f"127.0.0.1:{http_receiver.port}"]

    def answer(req):
        entries = req.json()["threatInfo"]["threatEntries"]
        matches = [
            {"threatType": "SOCIAL_ENGINEERING", "threat": {"url": e["url"]}}
            for e in entries
            if "evil" in e["url"]
        ]
        return Reply(200, {"matches": matches} if matches else {})

    http_receiver.handler = answer
    yield http_receiver
    cache.clear()


def test_an_unsafe_link_quarantines_and_verdicts_are_cached(
    safe_browsing, ai_org, llm_server, receive, run_pipeline
):
    body = "Please log in at https://evil.example/login and see https://docs.example/help"
    r = receive(text_body=body)
    run_pipeline()
    m = _m(r)
    assert m.processing_status == "quarantined"
    assert m.security_flags["phishingDetected"] is True
    assert "unsafe link (Safe Browsing): https://evil.example/login" in m.security_flags["phishingReasons"]
    (req,) = safe_browsing.requests
    assert req.query["key"] == ["sb-key"]
    assert {e["url"] for e in req.json()["threatInfo"]["threatEntries"]} == {
        "https://evil.example/login",
        "https://docs.example/help",
    }
    receive(text_body=body)
    run_pipeline()
    assert len(safe_browsing.requests) == 1  # both verdicts came from the cache


def test_safe_links_pass(safe_browsing, ai_org, llm_server, receive, run_pipeline):
    r = receive(text_body="Our docs at https://docs.example/help did not answer it.")
    run_pipeline()
    assert _m(r).processing_status == "draft_ready" and len(safe_browsing.requests) == 1


def test_url_reputation_fails_open(safe_browsing, ai_org, llm_server, receive, run_pipeline):
    safe_browsing.handler = lambda req: Reply(500, "down")
    r = receive(text_body="See https://evil.example/login")
    run_pipeline()
    assert _m(r).processing_status == "draft_ready"


def test_the_lookup_goes_through_the_outbound_guard(
    safe_browsing, settings, ai_org, llm_server, receive, run_pipeline
):
    settings.OUTBOUND_ALLOWED_HOSTS = []  # the loopback stand-in is no longer allowed: refused, fails open
    r = receive(text_body="See https://evil.example/login")
    run_pipeline()
    assert _m(r).processing_status == "draft_ready" and safe_browsing.requests == []


def test_no_key_no_lookup(safe_browsing, settings, ai_org, llm_server, receive, run_pipeline):
    settings.GOOGLE_SAFE_BROWSING_API_KEY = ""
    r = receive(text_body="See https://evil.example/login")
    run_pipeline()
    assert _m(r).processing_status == "draft_ready" and safe_browsing.requests == []


# --- link sanitizing for autonomous sends (AGT-22) ----------------------------------------------------------


def test_sanitize_links_keeps_only_the_sender_domain():
    text, removed = sanitize_links(
        "See https://acme.test/help, https://docs.acme.test/a?b=1 and https://evil.example/x. Or www.evil.example.",
        "acme.test",
    )
    assert (
        text
        == "See https://acme.test/help, https://docs.acme.test/a?b=1 and [link removed]. Or [link removed]."
    )
    assert removed == ["https://evil.example/x", "www.evil.example"]
    assert sanitize_links("https://acme.test.evil.example/", "acme.test")[0] == "[link removed]"


def test_autonomous_reply_is_sent_with_foreign_links_removed(
    ai_org, llm_server, receive, run_pipeline, smtp_sink
):
    from delivery.models import TransactionalSend

    config, _ = AgentConfig.objects.get_or_create(organization=ai_org)
    config.is_auto_reply_enabled, config.is_shadow_mode, config.auto_send_delay_ms = True, False, 0
    config.save()
    llm_server.answers["draft"] = "Download it at https://acme.test/invoices or at https://evil.example/grab."
    from inbox.models import KnowledgeEntry

    KnowledgeEntry.objects.create(
        organization=ai_org,
        title="Invoice downloads",
        content="Invoices: https://acme.test/invoices (a partner mirrors them at https://evil.example/grab).",
    )
    r = receive()
    run_pipeline()
    m = _m(r)
    assert m.processing_status == "approved" and m.approval_source == "auto"
    reply = TransactionalSend.objects.get(inbound_message_id=m.pk)
    assert "https://acme.test/invoices" in reply.text_body and "evil.example" not in reply.text_body
    assert "[link removed]" in reply.text_body and "evil.example" not in reply.html_body


def test_human_approved_reply_keeps_its_links(org, make_message, smtp_sink):
    from delivery.models import TransactionalSend

    m = make_message(
        "approved",
        approval_source="human",
        draft_response="See https://partner.example/x",
        dkim_result="pass",
        sender_authenticated=True,
    )
    assert send_approved_reply(m.pk).startswith("reply queued")
    assert "https://partner.example/x" in TransactionalSend.objects.get(inbound_message_id=m.pk).text_body


def test_reference_monitor_refuses_a_secret_in_an_autonomous_reply(org, make_message, smtp_sink):
    m = make_message(
        "approved",
        approval_source="auto",
        draft_response="api_key: sk-abcdefghijklmnopqrstuv",
        dkim_result="pass",
        sender_authenticated=True,
    )
    assert send_approved_reply(m.pk) == "failed: Reference monitor: the draft contains a credential or secret"
    assert InboundMessage.objects.get(pk=m.pk).processing_status == "failed"


# --- an organization's own model provider (AGT-28) ----------------------------------------------------------


@pytest.fixture
def owner(client, django_user_model, ai_org):
    user = django_user_model.objects.create_user(username="ann", password="pw", is_staff=True)
    Membership.objects.create(user=user, organization=ai_org, role="owner")
    client.force_login(user)
    return client


def test_organization_provider_from_the_admin_form_overrides_the_environment(
    owner, ai_org, llm_server, settings, receive, run_pipeline
):
    settings.LLM_PROVIDER = ""  # the environment configures no model
    settings.LLM_BASE_URL = ""
    settings.OUTBOUND_ALLOWED_HOSTS = [llm_server.url.split("/")[2]]
    forget()
    add = reverse("admin:inbox_llmprovidersetting_add")
    page = owner.get(add).content.decode()
    assert 'type="password"' in page and "<select" in page and "Stored encrypted" in page
    data = {"organization": str(ai_org.pk), "provider": "openai", "base_url": llm_server.url, "api_key": ""}
    refused = owner.post(add, data).content.decode()
    assert "Enter the provider&#x27;s API key" in refused
    response = owner.post(add, {**data, "api_key": "org-secret-key"}, follow=True)
    assert response.status_code == 200
    row = LlmProviderSetting.objects.get(organization=ai_org)
    assert (
        "org-secret-key" not in row.api_key_encrypted
        and decrypt_key(row.api_key_encrypted) == "org-secret-key"
    )
    change = owner.get(reverse("admin:inbox_llmprovidersetting_change", args=[row.pk])).content.decode()
    assert "org-secret-key" not in change and "a key is stored (encrypted)" in change

    # AGT-30: the organization's own provider makes `ai` effective; another organization still needs one
    from owlat.flags import ai_needs_configuration, flag_enabled
    from owlat.organizations import organization_create

    assert flag_enabled(ai_org.pk, "ai") and flag_enabled(ai_org.pk, "ai.agent")
    assert not ai_needs_configuration(ai_org.pk)
    assert ai_needs_configuration(organization_create(name="Other").pk)

    r = receive()
    run_pipeline()
    m = _m(r)
    assert m.processing_status == "draft_ready" and "Billing" in m.draft_response
    assert llm_server.count("classify") == 1
    forget()


def test_an_organization_base_url_to_a_private_address_is_refused(
    owner, ai_org, settings, receive, run_pipeline
):
    settings.LLM_BASE_URL = ""
    settings.OUTBOUND_ALLOWED_HOSTS = []
    add = reverse("admin:inbox_llmprovidersetting_add")
    data = {
        "organization": str(ai_org.pk),
        "provider": "openai",
        "base_url": "http://127.0.0.1:9/v1",
        "api_key": "k",
    }
    page = owner.post(add, data).content.decode()
    assert not LlmProviderSetting.objects.exists() and "base_url" in page
    # a row that slipped past the form is still refused at connect time: the step fails, nothing is sent there
    from inbox.provider_settings import encrypt_key

    LlmProviderSetting.objects.create(
        organization=ai_org,
        provider="openai",
        base_url="http://127.0.0.1:9/v1",
        api_key_encrypted=encrypt_key("k"),
    )
    forget()
    r = receive()
    run_pipeline()
    m = _m(r)
    assert m.processing_status == "failed" and "OutboundRefused" in m.error_message
    forget()
