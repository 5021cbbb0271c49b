"""End to end with real worker processes, the loopback SMTP sink and the loopback chat-completions server
(real `openai` client in the workers)."""

from __future__ import annotations

import pytest

from inbox.models import AgentAction, AgentConfig, InboundMessage, KnowledgeEntry
from inbox.receive import ParsedMessage, message_receive
from inbox.walker import stale_steps_resume
from owlat.models import Domain, DomainStatus, OrganizationSettings
from owlat.organizations import organization_create
from testsupport.llm import llm_settings

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def worker_env(llm_server):
    return {**llm_settings(llm_server, timeout=10), "INBOX_STEP_LEASE_SECONDS": "2"}


@pytest.fixture
def org():
    org = organization_create(
        name="Acme", default_from_email="support@acme.test", default_from_name="Acme Support"
    )
    Domain.objects.create(organization=org, domain="acme.test", status=DomainStatus.VERIFIED)
    s = OrganizationSettings.objects.get(organization=org)
    s.feature_flags = {**s.feature_flags, "ai": True}
    s.save()
    AgentConfig.objects.create(
        organization=org, is_auto_reply_enabled=True, is_shadow_mode=False, auto_send_delay_ms=0
    )
    KnowledgeEntry.objects.create(
        organization=org, title="Invoices", content="You can download every invoice under Billing → Invoices."
    )
    return org


def _receive(org, n: int = 1):
    return message_receive(
        organization_id=org.pk,
        parsed=ParsedMessage(
            message_id=f"<e2e-{n}@mail.example.com>",
            from_email="jane@example.com",
            from_name="Jane Doe",
            to=["support@acme.test"],
            subject="Where is my invoice?",
            text_body="Hello, where can I download my October invoice? Jane",
            references="<older@mail.example.com>",
            authentication={"spf": "pass", "dkim": "pass", "dmarc": "pass"},
        ),
    ).message


def test_auto_send_delivers_exactly_one_threaded_reply(org, llm_server, smtp_sink, workers):
    m = _receive(org)
    [reply] = smtp_sink.wait_for(1, timeout=60)
    assert reply.rcpt_tos == ["jane@example.com"]
    assert reply["In-Reply-To"] == "<e2e-1@mail.example.com>"
    assert reply["References"] == "<older@mail.example.com> <e2e-1@mail.example.com>"
    assert reply["Auto-Submitted"] == "auto-replied"
    assert reply["Subject"] == "Re: Where is my invoice?"
    assert "Billing" in reply.text()
    workers.wait_until(lambda: InboundMessage.objects.get(pk=m.pk).processing_status == "sent", timeout=30)
    m.refresh_from_db()
    assert m.approval_source == "auto" and m.thread.latest_draft_status == "sent"
    assert smtp_sink.count_for("jane@example.com") == 1


def test_worker_killed_mid_pipeline_resumes_without_redoing_steps(
    org, llm_server, smtp_sink, workers, settings, completed_steps
):
    """SIGKILL while the draft step runs: the finished steps stay finished, the step is resumed once its lease
    has run out (the 5-minute sweep, called here), and exactly one reply goes out."""
    settings.INBOX_STEP_LEASE_SECONDS = 2
    llm_server.delays["draft"] = 4.0
    m = _receive(org, 2)
    workers.wait_until(
        lambda: AgentAction.objects.filter(inbound_message=m, action_type="draft", status="running").exists(),
        timeout=60,
    )
    workers.kill("inbox")
    done_before = {
        a.action_type: a.completed_at
        for a in AgentAction.objects.filter(inbound_message=m, status="completed")
    }
    assert set(done_before) == {"security_scan", "context_retrieval", "classify"}
    llm_server.delays["draft"] = 0.0
    workers.restart("inbox", timeout=60)
    import time

    time.sleep(2.5)  # past the step lease
    assert stale_steps_resume() == 1
    [reply] = smtp_sink.wait_for(1, timeout=60)
    assert reply["In-Reply-To"] == "<e2e-2@mail.example.com>"
    workers.wait_until(lambda: InboundMessage.objects.get(pk=m.pk).processing_status == "sent", timeout=30)
    actions = completed_steps(m)
    for a in actions:
        if a.action_type in done_before:
            assert a.completed_at == done_before[a.action_type]  # not redone
    assert llm_server.count("classify") == 1 and llm_server.count("guard") == 1
    assert stale_steps_resume() == 0
    time.sleep(1.0)
    assert smtp_sink.count_for("jane@example.com") == 1


def test_a_busy_default_queue_does_not_delay_triage(org, llm_server, smtp_sink, workers):
    """Both `default` workers are held by long tasks (a campaign start, an automation fan-out): the inbox's own
    cluster still takes the mail from receipt to the sent reply."""
    import time

    from owlat.jobs import enqueue

    for _ in range(4):
        enqueue("time.sleep", 25)
    time.sleep(1.0)  # the default cluster has taken its two
    started = time.monotonic()
    m = _receive(org, 3)
    [reply] = smtp_sink.wait_for(1, timeout=20)
    assert reply["In-Reply-To"] == "<e2e-3@mail.example.com>"
    assert time.monotonic() - started < 20  # well before the default queue is free again (about 50 s)
    workers.wait_until(lambda: InboundMessage.objects.get(pk=m.pk).processing_status == "sent", timeout=20)
