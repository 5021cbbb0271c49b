"""The inbox pipeline's own queue (inbox.queues): every task it enqueues goes to `INBOX_QUEUE`, so a backlog on
`default` (automations, webhooks, campaign control tasks) never delays inbound triage."""

from __future__ import annotations

import pytest
from django.core.exceptions import ImproperlyConfigured

from inbox.models import InboundMessage
from inbox.queues import inbox_queue
from owlat.jobs import enqueue
from testsupport.queue import drain_queue, queued_tasks

pytestmark = pytest.mark.django_db


def test_the_pipeline_runs_on_the_inbox_queue_past_a_default_backlog(ai_org, llm_server, receive):
    for n in range(50):  # a campaign start or an automation fan-out filling `default`
        enqueue("owlat.jobs.heartbeat_task", f"backlog-{n}")
    r = receive()
    assert [t.func for t in queued_tasks("inbox")] == ["inbox.tasks.message_start_task"]
    ran = drain_queue(200, queue="inbox")
    assert {t.queue for t in ran} == {"inbox"}
    assert InboundMessage.objects.get(pk=r.message.pk).processing_status == "draft_ready"
    assert len(queued_tasks("default")) == 50  # the backlog is still waiting: triage did not queue behind it


def test_inbox_queue_setting_folds_back_or_refuses_an_unknown_name(settings):
    settings.INBOX_QUEUE = "default"
    assert inbox_queue() == "default"
    settings.INBOX_QUEUE = "inbx"
    with pytest.raises(ImproperlyConfigured, match="INBOX_QUEUE"):
        inbox_queue()


def test_inbox_schedules_name_the_inbox_queue():
    from inbox.schedules import SCHEDULES

    assert {s.queue for s in SCHEDULES} == {"inbox"}
