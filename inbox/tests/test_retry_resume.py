"""A retried message resumes at the step that failed (ADR-008: no partial retry wastes model calls): the scan's
verdict, the context and the classification are kept, the failed step runs again on its first input, and a
retried draft or route never produces a second draft or a second reply."""

from __future__ import annotations

import pytest

from inbox.models import AgentAction, InboundMessage
from inbox.retry import failed_actions_retry
from inbox.tests.test_pipeline import _auto_ready

pytestmark = pytest.mark.django_db


def _kinds(m) -> list[tuple[str, str]]:
    rows = AgentAction.objects.filter(inbound_message=m).order_by("created_at")
    return [(a.action_type, a.status) for a in rows]


def _model_calls(llm_server) -> dict[str, int]:
    return {t: llm_server.count(t) for t in ("guard", "classify", "draft", "quality")}


def test_a_failed_draft_is_retried_from_the_draft_step(ai_org, llm_server, receive, run_pipeline):
    llm_server.statuses["draft"] = 500
    r = receive()
    run_pipeline()
    m = InboundMessage.objects.get(pk=r.message.pk)
    assert m.processing_status == "failed"
    verdict, before = m.security_flags, _model_calls(llm_server)
    del llm_server.statuses["draft"]
    assert failed_actions_retry() == 1
    summaries = run_pipeline()
    assert any(s.startswith("resumed; draft") for s in summaries if isinstance(s, str)), summaries
    m.refresh_from_db()
    assert m.processing_status == "draft_ready" and "Billing" in m.draft_response
    after = _model_calls(llm_server)
    assert after["guard"] == before["guard"] and after["classify"] == before["classify"]  # not re-run
    assert after["draft"] > before["draft"]
    assert m.security_flags == verdict
    assert _kinds(m) == [
        ("security_scan", "completed"),
        ("context_retrieval", "completed"),
        ("classify", "completed"),
        ("draft", "completed"),
        ("route", "completed"),
    ]
    assert AgentAction.objects.get(inbound_message=m, action_type="draft").retry_count == 1


def test_a_failed_classification_resumes_at_classify_with_the_kept_verdict(
    ai_org, llm_server, receive, run_pipeline
):
    llm_server.statuses["classify"] = 500
    r = receive()
    run_pipeline()
    del llm_server.statuses["classify"]
    guards = llm_server.count("guard")
    assert failed_actions_retry() == 1
    run_pipeline()
    m = InboundMessage.objects.get(pk=r.message.pk)
    assert m.processing_status == "draft_ready" and m.classification["category"] == "support"
    assert llm_server.count("guard") == guards
    assert [k for k, _ in _kinds(m)].count("security_scan") == 1


def test_a_failed_route_is_retried_once_and_sends_exactly_one_reply(
    ai_org, llm_server, receive, run_pipeline, smtp_sink, monkeypatch
):
    from delivery.models import TransactionalSend
    from inbox.steps import route as route_step

    _auto_ready(ai_org)
    real, calls = route_step.route, []

    def flaky(output, input, ctx):
        calls.append(1)
        if len(calls) == 1:
            raise RuntimeError("database went away")
        return real(output, input, ctx)

    monkeypatch.setattr(route_step, "route", flaky)
    r = receive()
    run_pipeline()
    m = InboundMessage.objects.get(pk=r.message.pk)
    assert m.processing_status == "failed" and not TransactionalSend.objects.filter(inbound_message_id=m.pk)
    drafts = llm_server.count("draft")
    assert failed_actions_retry() == 1
    run_pipeline()
    assert failed_actions_retry() == 0  # nothing left to retry: a second retry run is a no-op
    run_pipeline()
    m.refresh_from_db()
    assert m.processing_status == "approved" and m.approval_source == "auto"
    assert llm_server.count("draft") == drafts  # the draft was kept, not written again
    assert TransactionalSend.objects.filter(inbound_message_id=m.pk).count() == 1
    assert [k for k, _ in _kinds(m)] == [
        "security_scan",
        "context_retrieval",
        "classify",
        "draft",
        "route",
    ]
