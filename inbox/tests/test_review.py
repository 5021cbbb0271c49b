"""AGT-25 review actions and AGT-26 undo windows; AGT-22/23 sending and its reconciliation."""

from __future__ import annotations

import datetime as dt

import pytest
from django.utils import timezone

from inbox.models import AgentAction, AgentConfig, InboundMessage
from inbox.review import (
    auto_sends_cancel_all,
    message_approve,
    message_archive,
    message_block_sender,
    message_edit,
    message_reject,
    message_retry,
    pending_send_cancel,
)
from inbox.sending import send_approved_reply, stuck_approved_reconcile
from owlat.models import AuditLog, DueTask

pytestmark = pytest.mark.django_db


def test_edit_keeps_revisions_and_approve_uses_the_undo_window(org, make_message, agent_config):
    m = make_message("draft_ready", draft_response="Agent text", draft_subject="Re: Q")
    assert message_edit(
        message_id=m.pk, organization_id=org.pk, actor="user:1", draft_response="Human text"
    ).ok
    m.refresh_from_db()
    assert [r["savedBy"] for r in m.draft_revisions] == ["agent", "user:1"] and m.is_draft_edited
    out = message_approve(message_id=m.pk, organization_id=org.pk, actor="user:1")
    assert out.ok
    m.refresh_from_db()
    assert m.approval_source == "human" and m.pending_auto_send is not None
    send_at = dt.datetime.fromisoformat(m.pending_auto_send["send_at"])
    assert dt.timedelta(seconds=14) < send_at - timezone.now() <= dt.timedelta(seconds=15)
    assert DueTask.objects.filter(func="inbox.tasks.send_approved_reply_task").exists()
    assert AuditLog.objects.filter(action="inbound.draft_approved", resource_id=str(m.pk)).exists()
    assert AuditLog.objects.filter(action="inbound.draft_edited", resource_id=str(m.pk)).exists()


def test_approve_with_edit_in_one_call(org, make_message, agent_config):
    m = make_message("draft_ready", draft_response="")
    out = message_approve(
        message_id=m.pk, organization_id=org.pk, actor="user:1", draft_response="Written by a human"
    )
    assert out.ok
    m.refresh_from_db()
    assert m.draft_response == "Written by a human"


def test_refusals(org, make_message):
    m = make_message("classifying")
    assert (
        message_edit(message_id=m.pk, organization_id=org.pk, actor="u", draft_response="x").reason
        == "not_draft_ready"
    )
    assert message_approve(message_id=m.pk, organization_id=org.pk, actor="u").reason == "illegal_edge"
    assert message_reject(message_id=m.pk, organization_id=org.pk, actor="u").reason == "illegal_edge"
    assert (
        message_retry(message_id=m.pk, organization_id=org.pk, actor="u").message == "Message has not failed"
    )
    sent = make_message("sent")
    assert message_block_sender(message_id=sent.pk, organization_id=org.pk, actor="u").reason == "terminal"
    assert pending_send_cancel(message_id=sent.pk, actor="u").reason == "already_sent"
    assert pending_send_cancel(message_id=m.pk, actor="u").reason == "not_approved"
    other_org_message = make_message("draft_ready")
    assert (
        message_reject(message_id=other_org_message.pk, organization_id=999999, actor="u").reason
        == "message_not_found"
    )


def test_undo_cancels_and_the_due_send_is_a_no_op(org, make_message, agent_config):
    m = make_message("draft_ready", draft_response="Hi")
    message_approve(message_id=m.pk, organization_id=org.pk, actor="u")
    m.refresh_from_db()
    token = m.pending_auto_send["task_id"]
    out = pending_send_cancel(message_id=m.pk, actor="u")
    assert out.ok and out.to_state == "draft_ready"
    assert send_approved_reply(m.pk, token).startswith("not approved")
    assert pending_send_cancel(message_id=m.pk, actor="u").reason == "not_approved"


def test_a_reply_on_the_thread_cancels_the_pending_send(org, receive, agent_config):
    first = receive(message_id="<p1@example.com>").message
    InboundMessage.objects.filter(pk=first.pk).update(processing_status="draft_ready", draft_response="Hi")
    assert message_approve(message_id=first.pk, organization_id=org.pk, actor="u").ok
    receive(message_id="<p2@example.com>", in_reply_to="<p1@example.com>")
    first.refresh_from_db()
    assert first.processing_status == "draft_ready"
    assert AuditLog.objects.filter(action="inbound.auto_send_cancelled", resource_id=str(first.pk)).exists()


def test_kill_switch_cancels_pending_autonomous_sends(org, make_message):
    m = make_message("drafting", draft_response="Hi")
    from inbox.lifecycle import message_transition

    assert message_transition(
        message_id=m.pk, to="approved", input={"source": "auto", "send_delay_ms": 60000}
    ).ok
    assert auto_sends_cancel_all(organization_id=org.pk, actor="u") == 1
    m.refresh_from_db()
    assert m.processing_status == "draft_ready"


def test_reject_archive_block(org, make_message):
    a = make_message("draft_ready", draft_response="x")
    assert message_reject(message_id=a.pk, organization_id=org.pk, actor="u", reason="wrong").ok
    b = make_message("quarantined")
    assert message_archive(message_id=b.pk, organization_id=org.pk, actor="u").ok
    c = make_message("draft_ready", from_email="spammer@example.com")
    assert message_block_sender(message_id=c.pk, organization_id=org.pk, actor="u").ok
    c.refresh_from_db()
    assert c.processing_status == "archived" and c.archive_reason == "sender_blocked"
    from owlat.suppression import is_suppressed

    assert is_suppressed(organization_id=org.pk, email="spammer@example.com", scope="transactional")


def test_operator_retry_resets_the_latest_failed_action(org, make_message):
    from inbox.lifecycle import action_claim, action_prepare, message_transition

    m = make_message("classifying")
    a = action_prepare(message=m, kind="classify")
    action_claim(a.pk)
    message_transition(
        message_id=m.pk, to="failed", input={"failing_action_id": str(a.pk), "error_message": "x"}
    )
    assert message_retry(message_id=m.pk, organization_id=org.pk, actor="u").ok
    a.refresh_from_db()
    m.refresh_from_db()
    assert a.status == "pending" and a.retry_count == 1 and m.processing_status == "received"


def test_send_failures_move_the_message_to_failed(org, make_message, smtp_sink):
    m = make_message("approved", draft_response="")
    assert send_approved_reply(m.pk) == "failed: No draft to send"
    m2 = make_message("approved", draft_response="Hi", from_email="not-an-address")
    assert send_approved_reply(m2.pk).startswith("failed: Unsupported or invalid reply recipient")


def test_send_is_idempotent_and_the_reconcile_cron_skips_queued(org, make_message, smtp_sink):
    m = make_message("approved", draft_response="Hi", processed_at=timezone.now() - dt.timedelta(minutes=20))
    assert send_approved_reply(m.pk).startswith("reply queued")
    assert send_approved_reply(m.pk) == "reply already queued"
    assert stuck_approved_reconcile() == 0
    stuck = make_message(
        "approved", draft_response="Hi", processed_at=timezone.now() - dt.timedelta(minutes=20)
    )
    assert stuck_approved_reconcile() == 1
    assert (
        AgentAction.objects.count() == 0
        and AgentConfig.objects.filter(organization=stuck.organization).count() <= 1
    )
