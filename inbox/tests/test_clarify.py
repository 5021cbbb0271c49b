"""The clarify step (AGT-18): questions when candidate replies disagree on owner-only slots, the owner's answers
resuming at drafting, the 24 h timeout (a guess, never auto-sent), degrading to no questions on any error, and
the answer form in the admin."""

from __future__ import annotations

import datetime as dt

import pytest
from django.urls import reverse
from django.utils import timezone
from django.utils.html import escape

from inbox.clarification import clarification_timeouts_resume, message_clarify
from inbox.models import AgentAction, AgentConfig, InboundMessage
from inbox.models import ProcessingStatus as P
from owlat.models import Membership

pytestmark = pytest.mark.django_db

SLOTS = {
    "slots": [
        {"name": "price", "question": "What does the upgrade cost?", "candidates": ["49 EUR", "59 EUR"]},
        {"name": "greeting", "question": "Which greeting?", "candidates": ["Hello", "hello"]},
    ]
}


@pytest.fixture
def clarifying(ai_org):
    config, _ = AgentConfig.objects.get_or_create(organization=ai_org)
    config.is_clarification_enabled = True
    config.save()
    return config


def _m(r) -> InboundMessage:
    return InboundMessage.objects.get(pk=r.message.pk)


def test_disagreeing_candidates_park_the_message_until_the_owner_answers(
    clarifying, ai_org, llm_server, receive, run_pipeline
):
    llm_server.answers["clarify"] = SLOTS
    r = receive()
    run_pipeline()
    m = _m(r)
    assert m.processing_status == "awaiting_clarification"
    questions = m.draft_options["questions"]
    assert [q["question"] for q in questions] == ["What does the upgrade cost?"]  # "Hello"/"hello" agree
    assert m.classification["category"] == "support" and llm_server.count("draft") == 0
    clarify = AgentAction.objects.get(inbound_message=m, action_type="clarify")
    assert clarify.status == "completed" and clarify.model_used == "loopback-fast"

    refused = message_clarify(message_id=m.pk, organization_id=ai_org.pk, actor="user:1", answers=[""])
    assert not refused.ok and refused.message == "Answer every question (one answer per question)"
    assert message_clarify(message_id=m.pk, organization_id=ai_org.pk, actor="user:1", answers=["49 EUR"]).ok
    run_pipeline()
    m = _m(r)
    assert m.processing_status == "draft_ready"
    assert m.draft_options["answers"] == ["49 EUR"] and not m.is_auto_send_blocked
    assert any("What does the upgrade cost? → 49 EUR" in p for p in llm_server.prompts())
    kinds = list(
        AgentAction.objects.filter(inbound_message=m)
        .order_by("created_at")
        .values_list("action_type", flat=True)
    )
    assert kinds == ["security_scan", "context_retrieval", "classify", "clarify", "draft", "route"]
    again = message_clarify(message_id=m.pk, organization_id=ai_org.pk, actor="user:1", answers=["x"])
    assert not again.ok and again.reason == "not_awaiting"


def test_agreeing_candidates_draft_at_once(clarifying, llm_server, receive, run_pipeline):
    llm_server.answers["clarify"] = {"slots": [{"name": "a", "question": "Q?", "candidates": ["yes", "Yes"]}]}
    r = receive()
    run_pipeline()
    assert _m(r).processing_status == "draft_ready" and llm_server.count("clarify") == 1


def test_a_clarify_error_degrades_to_no_questions(clarifying, llm_server, receive, run_pipeline):
    llm_server.statuses["clarify"] = 500
    r = receive()
    run_pipeline()
    m = _m(r)
    assert m.processing_status == "draft_ready" and m.error_message is None
    clarify = AgentAction.objects.get(inbound_message=m, action_type="clarify")
    assert clarify.status == "completed" and "model call failed" in clarify.output["error"]


def test_switched_off_by_default_no_clarify_call(ai_org, llm_server, receive, run_pipeline):
    r = receive()
    run_pipeline()
    assert _m(r).processing_status == "draft_ready" and llm_server.count("clarify") == 0


def test_timeout_drafts_a_guess_that_is_never_auto_sent(
    clarifying, ai_org, llm_server, receive, run_pipeline
):
    clarifying.is_auto_reply_enabled = True
    clarifying.is_shadow_mode = False
    clarifying.auto_send_delay_ms = 0
    clarifying.save()
    llm_server.answers["clarify"] = SLOTS
    r = receive()
    run_pipeline()
    assert _m(r).processing_status == "awaiting_clarification"
    assert clarification_timeouts_resume() == 0  # not yet 24 h
    later = timezone.now() + dt.timedelta(hours=24, minutes=1)
    assert clarification_timeouts_resume(now=later) == 1
    run_pipeline()
    m = _m(r)
    assert m.processing_status == "draft_ready" and m.is_auto_send_blocked
    assert m.draft_options["clarificationTimedOut"] is True
    assert "did not answer the clarification questions" in m.agent_decision["reason"]
    assert any("did not answer these questions" in p for p in llm_server.prompts())


def test_owner_answers_in_the_admin(
    client, django_user_model, clarifying, ai_org, llm_server, receive, run_pipeline
):
    llm_server.answers["clarify"] = SLOTS
    r = receive()
    run_pipeline()
    user = django_user_model.objects.create_user(username="ann", password="pw", is_staff=True)
    Membership.objects.create(user=user, organization=ai_org, role="owner")
    client.force_login(user)
    page = client.get(reverse("admin:inbox_inboundmessage_change", args=[r.message.pk])).content.decode()
    assert "What does the upgrade cost?" in page and 'name="answer_0"' in page and "49 EUR, 59 EUR" in page
    answer = reverse("admin:inbox_inboundmessage_verb", args=[r.message.pk, "answer"])
    assert answer in page
    response = client.post(answer, {"answer_0": "59 EUR"}, follow=True)
    done = f"done ({P.AWAITING_CLARIFICATION.label} → {P.DRAFTING.label})"
    assert escape(done) in response.content.decode()
    run_pipeline()
    assert _m(r).processing_status == "draft_ready"
