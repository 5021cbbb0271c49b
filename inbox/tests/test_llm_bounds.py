"""Bounded, strictly read model calls (inbox.llm): every call carries max_tokens, a provider without
`json_schema` structured output gets `json_object` once it refused it, and a guard answer outside its schema
is no verdict (the message goes to human review, it neither fails nor passes as clean)."""

from __future__ import annotations

import pytest

from inbox import llm
from inbox.models import InboundMessage

pytestmark = pytest.mark.django_db


def test_every_call_is_bounded_by_max_tokens(ai_org, llm_server, receive, run_pipeline):
    receive()
    run_pipeline()
    bounds = {llm_server.task_of(r): r.get("max_tokens") for r in llm_server.requests}
    assert bounds["draft"] == llm.MAX_TOKENS_CAPABLE and bounds["classify"] == llm.MAX_TOKENS_FAST
    assert all(r.get("max_tokens") for r in llm_server.requests)


def test_a_provider_without_json_schema_gets_json_object(ai_org, llm_server, receive, run_pipeline):
    llm._no_json_schema.clear()
    answer = llm_server._answer
    formats = []

    def refusing(body, path):
        fmt = (body.get("response_format") or {}).get("type")
        formats.append(fmt)
        if fmt == "json_schema":
            return 400, {
                "error": {"message": "response_format json_schema is not supported", "type": "invalid"}
            }
        return answer(body, path)

    llm_server._answer = refusing
    try:
        r = receive()
        run_pipeline()
    finally:
        llm._no_json_schema.clear()
    m = InboundMessage.objects.get(pk=r.message.pk)
    assert m.processing_status == "draft_ready" and m.classification["category"] == "support"
    assert formats.count("json_schema") == 1  # refused once, then remembered for this provider
    assert "json_object" in formats


def test_a_guard_answer_outside_its_schema_sends_the_message_to_review(
    ai_org, llm_server, receive, run_pipeline
):
    llm_server.answers["guard"] = {"isInjection": False, "confidence": "low", "reason": "?"}
    r = receive()
    run_pipeline()
    m = InboundMessage.objects.get(pk=r.message.pk)
    assert m.processing_status == "draft_ready" and m.security_flags["guardUnavailable"] is True
    assert (
        "guard was unavailable" in m.agent_decision["reason"]
        or m.agent_decision["decision"] == "human_review"
    )
