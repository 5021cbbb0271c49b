"""Admin: review and quarantine queues, sanitized body, draft edit through the service, buttons calling the
lifecycle, step timeline, agent configuration form, knowledge entries."""

from __future__ import annotations

import pytest
from django.urls import reverse

from inbox.lifecycle import action_claim, action_complete, action_prepare
from inbox.models import AgentConfig, InboundMessage
from owlat.models import Membership

pytestmark = pytest.mark.django_db


@pytest.fixture
def staff(client, django_user_model, org):
    user = django_user_model.objects.create_user(username="ann", password="pw", is_staff=True)
    Membership.objects.create(user=user, organization=org, role="owner")
    client.force_login(user)
    return client


def test_review_queue_renders_sanitized_body_flags_and_timeline(staff, make_message):
    m = make_message(
        "draft_ready",
        text_body=None,
        html_body='<p>Hello <script>alert(1)</script><b>there</b></p><p style="display:none">SECRET-HIDDEN</p>',
        draft_response="Agent draft",
        security_flags={"injectionDetected": False, "spamScore": 10},
        classification={"category": "support", "priority": "normal"},
    )
    a = action_prepare(message=m, kind="route")
    action_claim(a.pk)
    action_complete(a.pk, output={}, duration_ms=12, model_used="gpt-x", token_usage={"totalTokens": 42})
    listing = staff.get(reverse("admin:inbox_reviewqueuemessage_changelist")).content.decode()
    assert m.subject in listing
    html = staff.get(reverse("admin:inbox_reviewqueuemessage_change", args=[m.pk])).content.decode()
    assert "Hello" in html and "there" in html
    assert (
        "<script>alert(1)</script>" not in html and "SECRET-HIDDEN" not in html and "<b>there</b>" not in html
    )
    assert (
        "Spam score" in html
        and "spamScore" not in html
        and "support" in html
        and "gpt-x" in html
        and "42" in html
    )
    assert reverse("admin:inbox_reviewqueuemessage_verb", args=[m.pk, "approve"]) in html


def test_draft_edit_goes_through_the_service_and_buttons_call_the_lifecycle(
    staff, org, make_message, agent_config
):
    m = make_message("draft_ready", draft_response="Agent draft", draft_subject="Re: Q")
    change = reverse("admin:inbox_inboundmessage_change", args=[m.pk])
    r = staff.post(change, {"draft_subject": "Re: Q", "draft_response": "Human draft"}, follow=True)
    assert r.status_code == 200
    m.refresh_from_db()
    assert m.draft_response == "Human draft" and m.is_draft_edited and len(m.draft_revisions) == 2
    approve = reverse("admin:inbox_inboundmessage_verb", args=[m.pk, "approve"])
    assert staff.get(approve).status_code == 405
    r = staff.post(approve, follow=True)
    assert "approved; the reply is sent after the undo window" in r.content.decode()
    assert InboundMessage.objects.get(pk=m.pk).processing_status == "approved"
    r = staff.post(reverse("admin:inbox_inboundmessage_verb", args=[m.pk, "release"]), follow=True)
    assert "Message is not quarantined" in r.content.decode()


def test_quarantine_queue_and_release(staff, make_message):
    q = make_message(
        "quarantined",
        security_flags={"injectionDetected": True, "injectionType": "prompt_injection", "confidence": 0.85},
    )
    make_message("draft_ready")
    listing = staff.get(reverse("admin:inbox_quarantinedmessage_changelist")).content.decode()
    assert "prompt_injection" in listing
    r = staff.post(reverse("admin:inbox_quarantinedmessage_verb", args=[q.pk, "release"]), follow=True)
    assert r.status_code == 200
    assert InboundMessage.objects.get(pk=q.pk).processing_status == "received"


def test_agent_configuration_form(staff, org, make_message):
    config, _ = AgentConfig.objects.get_or_create(organization=org, defaults={"is_auto_reply_enabled": True})
    from inbox.lifecycle import message_transition

    auto = make_message("drafting", draft_response="Hi")
    message_transition(message_id=auto.pk, to="approved", input={"source": "auto", "send_delay_ms": 60000})
    url = reverse("admin:inbox_agentconfig_change", args=[config.pk])
    html = staff.get(url).content.decode()
    assert "/inbound/raw</code>" in html and "Authorization: Bearer" in html and "Monday" in html
    data = {
        "organization": org.pk,
        "confidence_threshold": "0.9",
        "max_daily_auto_replies": "50",
        "tone_description": "Warm",
        "signature_template": "— Acme",
        "auto_send_delay_ms": "60000",
        "human_approve_undo_delay_ms": "15000",
        "clarification_timeout_ms": "86400000",
        "coalesce_window_ms": "0",
        "is_clarification_enabled": "on",
        "working_hours_timezone": "Europe/Berlin",
        "working_hours_start_minute": "480",
        "working_hours_end_minute": "1020",
        "working_days": ["1", "3"],
        "shadow_mode": "",
        "is_working_hours_enabled": "on",
    }
    r = staff.post(url, data, follow=True)
    assert r.status_code == 200, r.content
    config.refresh_from_db()
    assert (
        config.working_days == [1, 3] and config.is_shadow_mode is False and not config.is_auto_reply_enabled
    )
    assert config.is_clarification_enabled
    assert InboundMessage.objects.get(pk=auto.pk).processing_status == "draft_ready"  # kill switch
    bad = staff.post(url, {**data, "confidence_threshold": "3"})
    assert "Between 0 and 1." in bad.content.decode()


def test_knowledge_entries(staff, org):
    r = staff.post(
        reverse("admin:inbox_knowledgeentry_add"),
        {"organization": org.pk, "title": "Refunds", "content": "Within 30 days.", "source": ""},
        follow=True,
    )
    assert r.status_code == 200
    from inbox.models import KnowledgeEntry

    assert KnowledgeEntry.objects.filter(organization=org, title="Refunds").exists()


def test_other_organization_sees_nothing(client, django_user_model, make_message):
    from owlat.organizations import organization_create

    other = organization_create(name="Other")
    user = django_user_model.objects.create_user(username="bob", password="pw", is_staff=True)
    Membership.objects.create(user=user, organization=other, role="owner")
    client.force_login(user)
    m = make_message("draft_ready")
    assert m.subject not in client.get(reverse("admin:inbox_inboundmessage_changelist")).content.decode()
    assert client.get(reverse("admin:inbox_inboundmessage_change", args=[m.pk])).status_code in (302, 404)
