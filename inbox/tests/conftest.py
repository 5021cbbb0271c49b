"""Small factories for the inbox tests."""

from __future__ import annotations

import itertools

import pytest
from django.utils import timezone

from inbox.models import AgentAction, AgentConfig, InboundMessage
from owlat.organizations import organization_create

_counter = itertools.count()


@pytest.fixture
def org(db):
    return organization_create(name="Acme", default_from_email="support@acme.test", default_from_name="Acme")


@pytest.fixture
def agent_config(org):
    config, _ = AgentConfig.objects.get_or_create(organization=org)
    return config


@pytest.fixture
def make_message(org):
    """A stored message in any state (the state is given at insert, which django-fsm allows, so edge tests can
    start anywhere); normal flows go through `message_receive`."""

    def make(status: str = "received", organization=None, **fields):
        n = next(_counter)
        values = {
            "message_id": f"<m{n}@example.com>",
            "from_email": "jane@example.com",
            "subject": "Question about my invoice",
            "text_body": "Hello, where can I download my invoice?",
            "received_at": timezone.now(),
        }
        values.update(fields)
        return InboundMessage.objects.create(
            organization=organization or org, processing_status=status, **values
        )

    return make


from testsupport.imap import imap_server  # noqa: E402,F401 - the loopback IMAP server fixture
from testsupport.llm import llm_server  # noqa: E402,F401 - the loopback chat-completions fixture


@pytest.fixture
def ai_org(org):
    """`org` with the `ai` flag on (it needs a configured model to be effective)."""
    from owlat.models import OrganizationSettings

    s = OrganizationSettings.objects.get(organization=org)
    s.feature_flags = {**s.feature_flags, "ai": True}
    s.save(update_fields=["feature_flags"])
    return org


@pytest.fixture
def receive(org):
    """Store a message through the receive path (AGT-02); keyword arguments override the ParsedMessage."""
    from inbox.receive import ParsedMessage, message_receive

    def do(organization=None, **fields):
        n = next(_counter)
        values = {
            "message_id": f"<r{n}@mail.example.com>",
            "from_email": "jane@example.com",
            "from_name": "Jane Doe",
            "to": ["support@acme.test"],
            "subject": "Where is my invoice?",
            "text_body": "Hello, I cannot find the invoice for October. Where can I download it? Thanks, Jane",
            "authentication": {"spf": "pass", "dkim": "pass", "dmarc": "pass"},
        }
        values.update(fields)
        return message_receive(organization_id=(organization or org).pk, parsed=ParsedMessage(**values))

    return do


@pytest.fixture
def run_pipeline():
    """Run the inbox queue's tasks in this process (the walker hops); returns the summaries."""
    from testsupport.queue import drain_queue

    def run(max_tasks: int = 200):
        return [t.result for t in drain_queue(max_tasks, queue="inbox")]

    return run


@pytest.fixture
def completed_steps():
    """`completed_steps(message)`: the message's agent actions in order, once it is asserted that they are the
    pipeline's five steps, each completed."""

    def check(message) -> list[AgentAction]:
        actions = list(AgentAction.objects.filter(inbound_message=message).order_by("created_at"))
        assert [a.action_type for a in actions] == [
            "security_scan",
            "context_retrieval",
            "classify",
            "draft",
            "route",
        ]
        assert all(a.status == "completed" for a in actions)
        return actions

    return check
