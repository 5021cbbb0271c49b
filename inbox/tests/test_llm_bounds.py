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


def test_a_reclaimed_step_counts_as_an_attempt_and_the_third_loss_abandons_it(
    ai_org, llm_server, receive, settings
):
    """A step whose worker is killed at the task timeout stays `running`; each reclaim after its lease is an
    attempt, and when the attempts are used up the message fails (abandoned step) instead of looping."""
    import datetime as dt

    from django.utils import timezone

    from inbox.lifecycle import MAX_RETRY_ATTEMPTS, action_claim
    from inbox.models import AgentAction
    from inbox.walker import step_run
    from testsupport.queue import drain_queue

    r = receive()
    drain_queue(1, queue="inbox")  # the start task: the scan runs, the next step waits pending
    [pending] = AgentAction.objects.filter(inbound_message=r.message, status="pending")

    def lost_worker():  # what a worker killed mid-step leaves behind
        started = timezone.now() - dt.timedelta(seconds=settings.INBOX_STEP_LEASE_SECONDS + 1)
        AgentAction.objects.filter(pk=pending.pk).update(status="running", started_at=started)

    assert action_claim(pending.pk)  # the first run: no attempt spent
    for attempt in range(1, MAX_RETRY_ATTEMPTS):
        lost_worker()
        assert action_claim(pending.pk)
        assert AgentAction.objects.get(pk=pending.pk).retry_count == attempt
    lost_worker()
    assert step_run(r.message.pk, pending.pk).startswith("abandoned")
    pending.refresh_from_db()
    assert pending.status == "abandoned" and "lease" in pending.error_message
    assert InboundMessage.objects.get(pk=r.message.pk).processing_status == "failed"


def test_a_model_call_times_out_well_inside_the_task_timeout(
    ai_org, llm_server, receive, run_pipeline, settings
):
    """With a 10 s task timeout a call may take at most (10 − the Retry-After wait) × 40 % = 2 s, whatever
    LLM_TIMEOUT_SECONDS says: a slow model fails the step, counted, instead of the worker being killed."""
    import time

    from inbox.models import AgentAction

    settings.Q_CLUSTER = {**settings.Q_CLUSTER, "timeout": 10}
    settings.LLM_TIMEOUT_SECONDS = 60.0
    assert llm.call_timeout() == pytest.approx(2.0)
    llm_server.delays["classify"] = 4.0
    r = receive()
    started = time.monotonic()
    run_pipeline()
    assert time.monotonic() - started < 4.0
    m = InboundMessage.objects.get(pk=r.message.pk)
    assert m.processing_status == "failed"
    [failed] = AgentAction.objects.filter(inbound_message=m, status="failed")
    assert failed.action_type == "classify" and failed.retry_count == 1
