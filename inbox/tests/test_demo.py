"""`manage.py bootstrap --demo` adds the inbox's demo messages through the kernel's demo registry."""

from __future__ import annotations

import pytest

from inbox.models import InboundMessage
from owlat.demo import bootstrap

pytestmark = pytest.mark.django_db


def test_demo_messages_in_several_states_and_idempotent(smtp_sink):
    result = bootstrap(demo=True)
    org = result.organization
    states = dict(
        InboundMessage.objects.filter(organization=org).values_list("message_id", "processing_status")
    )
    assert states == {
        "<demo-draft-ready@example.com>": "draft_ready",
        "<demo-quarantined@example.com>": "quarantined",
        "<demo-sent@example.com>": "approved",  # the workers send it (→ sent)
    }
    from testsupport.queue import drain_queue

    drain_queue(200)
    assert (
        InboundMessage.objects.get(organization=org, message_id="<demo-sent@example.com>").processing_status
        == "sent"
    )
    replies = [
        m
        for m in smtp_sink.messages_for("grace@example.com")
        if m["In-Reply-To"] == "<demo-sent@example.com>"
    ]
    assert len(replies) == 1  # (the campaigns demo may mail the sample contacts too)
    bootstrap(demo=True)
    assert InboundMessage.objects.filter(organization=org).count() == 3
