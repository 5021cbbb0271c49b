"""Our earlier replies in the drafting context: a customer's follow-up is drafted knowing what we already sent
her (the text that went out), within the history's size limits, and never with another customer's thread."""

from __future__ import annotations

import pytest

from inbox.models import InboundMessage
from inbox.steps.context import HISTORY_TOTAL_CHARS, REPLY_CHARS
from inbox.tests.test_thread_binding import _auto_ready

pytestmark = pytest.mark.django_db


def _draft_prompts(llm_server) -> list[str]:
    return [
        m["content"]
        for r in llm_server.requests
        if llm_server.task_of(r) == "draft"
        for m in r["messages"]
        if m["role"] == "user"
    ]


def _sent_first_message(ai_org, receive, run_pipeline, **fields):
    from inbox.review import message_approve
    from testsupport.queue import drain_queue

    config = _auto_ready(ai_org)
    config.is_auto_reply_enabled = False  # a reviewer approves it, with no undo window
    config.human_approve_undo_delay_ms = 0
    config.save()
    first = receive(message_id="<j1@example.com>", **fields)
    run_pipeline()
    assert message_approve(message_id=first.message.pk, organization_id=ai_org.pk, actor="user:1").ok
    run_pipeline()
    drain_queue(50, queue="transactional")  # the reply goes out: the message becomes `sent`
    run_pipeline()
    m = InboundMessage.objects.get(pk=first.message.pk)
    assert m.processing_status == "sent", m.processing_status
    return m


def test_the_follow_up_draft_sees_our_earlier_reply(ai_org, llm_server, receive, run_pipeline, smtp_sink):
    llm_server.answers["draft"] = "Your invoice is under Billing → Invoices (ticket R-7781)."
    first = _sent_first_message(ai_org, receive, run_pipeline)
    llm_server.requests.clear()
    receive(in_reply_to="<j1@example.com>", subject="Re: Where is my invoice?", text_body="It is not there.")
    run_pipeline()
    [prompt] = _draft_prompts(llm_server)
    assert "Our reply (sent " in prompt and "ticket R-7781" in prompt
    assert prompt.index("ticket R-7781") < prompt.index("It is not there.")  # history before the current mail
    assert first.draft_response in prompt


def test_a_long_earlier_reply_is_cut_and_the_history_bounded(
    ai_org, llm_server, receive, run_pipeline, smtp_sink
):
    llm_server.answers["draft"] = "Billing → Invoices. " + "Z" * 9000
    _sent_first_message(ai_org, receive, run_pipeline)
    llm_server.requests.clear()
    receive(in_reply_to="<j1@example.com>", subject="Re: x", text_body="Still missing.")
    run_pipeline()
    [prompt] = _draft_prompts(llm_server)
    assert "Our reply (sent " in prompt
    assert "Z" * (REPLY_CHARS - 100) in prompt and "Z" * (REPLY_CHARS + 1) not in prompt
    assert REPLY_CHARS < HISTORY_TOTAL_CHARS


def test_another_senders_thread_reply_never_reaches_the_draft(
    ai_org, llm_server, receive, run_pipeline, smtp_sink
):
    llm_server.answers["draft"] = "Billing → Invoices, ticket R-9090 for Jane."
    _sent_first_message(ai_org, receive, run_pipeline)
    llm_server.requests.clear()
    receive(
        from_email="mallory@evil.example",
        in_reply_to="<j1@example.com>",
        subject="Re: x",
        text_body="Me too.",
    )
    run_pipeline()
    prompts = _draft_prompts(llm_server)
    assert prompts and all("R-9090" not in p for p in prompts)


def test_history_is_bounded_newest_first():
    from types import SimpleNamespace

    from django.utils import timezone

    from inbox.steps.context import bounded_history

    now = timezone.now()
    msgs = [
        SimpleNamespace(
            from_email="jane@example.com",
            received_at=now,
            subject=f"s{i}",
            text_body=f"m{i} " + "x" * 1900,
            html_body="",
            processing_status="sent",
            draft_response=f"r{i} " + "y" * 1400,
            processed_at=now,
        )
        for i in range(5)
    ]
    kept = bounded_history(msgs)  # newest first in, oldest first out
    assert sum(len(k) for k in kept) <= HISTORY_TOTAL_CHARS
    assert kept[-1].startswith("From: jane@example.com") and "m0 " in kept[-1]
    assert len(kept) == 2
