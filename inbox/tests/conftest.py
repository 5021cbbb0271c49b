"""Small factories for the inbox tests."""

from __future__ import annotations

import itertools

import pytest
from django.utils import timezone

from inbox.models import AgentConfig, InboundMessage
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
