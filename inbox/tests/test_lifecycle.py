"""AGT-04 … AGT-09: every edge and refusal of the processing lifecycle, its effects, and agent-action reuse."""

from __future__ import annotations

import datetime as dt

import pytest
from django.utils import timezone

from inbox.lifecycle import (
    LEGAL_EDGES,
    MAX_RETRY_ATTEMPTS,
    action_claim,
    action_complete,
    action_fail,
    action_prepare,
    action_reset,
    message_reduce,
    message_transition,
)
from inbox.models import ActionStatus, AgentAction, ConversationThread, InboundMessage
from inbox.models import ProcessingStatus as P
from owlat.models import AuditLog, DueTask

ALL = [s.value for s in P]
TERMINAL = {"sent", "rejected", "archived"}
NON_TERMINAL = [s for s in ALL if s not in TERMINAL]

#: AGT-05 written out from the spec table, star sources included.
SPEC_EDGES = {
    ("received", "security_check"),
    ("security_check", "classifying"),
    ("security_check", "quarantined"),
    ("quarantined", "received"),
    ("classifying", "drafting"),
    ("classifying", "draft_ready"),
    ("classifying", "awaiting_clarification"),
    ("awaiting_clarification", "drafting"),
    ("drafting", "draft_ready"),
    ("drafting", "approved"),
    ("draft_ready", "approved"),
    ("draft_ready", "rejected"),
    ("approved", "sent"),
    ("approved", "draft_ready"),
    ("failed", "received"),
    *{(s, "failed") for s in NON_TERMINAL if s != "failed"},
    *{(s, "archived") for s in NON_TERMINAL},
}
AT = dt.datetime(2026, 11, 30, 12, 0, tzinfo=dt.UTC)


def test_declared_graph_is_the_spec_graph():
    assert {(str(a), str(b)) for a, b in LEGAL_EDGES} == SPEC_EDGES
    assert len(ALL) == 12


@pytest.mark.parametrize("frm", ALL)
@pytest.mark.parametrize("to", ALL)
def test_reducer_every_pair(frm, to):
    decision = message_reduce(message_id="m1", frm=frm, to=to, input={}, at=AT)
    if frm in TERMINAL:
        assert not decision.ok and decision.reason == "terminal"
    elif (frm, to) in SPEC_EDGES:
        assert decision.ok and decision.patch["processing_status"] == to
    else:
        assert not decision.ok and decision.reason == "illegal_edge"


def test_self_transition_is_illegal():
    assert message_reduce(message_id="m", frm="failed", to="failed", input={}, at=AT).reason == "illegal_edge"


def test_patches_per_target():
    d = message_reduce(
        message_id="m",
        frm="security_check",
        to="classifying",
        input={"security_flags": {"a": 1}, "context_tier": "normal"},
        at=AT,
    )
    assert d.patch["security_flags"] == {"a": 1} and d.patch["context_tier"] == "normal"
    d = message_reduce(
        message_id="m", frm="classifying", to="drafting", input={"classification": {"confidence": 0.7}}, at=AT
    )
    assert d.patch["confidence_score"] == 0.7
    d = message_reduce(message_id="m", frm="draft_ready", to="rejected", input={}, at=AT)
    assert d.patch["processed_at"] == AT
    d = message_reduce(message_id="m", frm="classifying", to="failed", input={"error_message": "boom"}, at=AT)
    assert d.patch["error_message"] == "boom" and d.patch["processed_at"] == AT
    d = message_reduce(
        message_id="m",
        frm="quarantined",
        to="received",
        input={"source": "release_quarantine", "content_hash": "h"},
        at=AT,
    )
    assert d.patch["security_flags"] is None and d.patch["error_message"] is None
    assert d.patch["is_auto_send_blocked"] is True and d.patch["released_content_hash"] == "h"
    d = message_reduce(message_id="m", frm="approved", to="draft_ready", input={}, at=AT)
    assert d.patch["pending_auto_send"] is None
    d = message_reduce(
        message_id="m", frm="classifying", to="awaiting_clarification", input={"questions": [{"q": 1}]}, at=AT
    )
    assert d.patch["draft_options"] == {"questions": [{"q": 1}], "askedAt": AT.isoformat()}
    d = message_reduce(
        message_id="m",
        frm="awaiting_clarification",
        to="drafting",
        input={"questions": [{"q": 1}], "answers": [], "clarification_timeout": True},
        at=AT,
    )
    assert (
        d.patch["is_auto_send_blocked"] is True and d.patch["draft_options"]["clarificationTimedOut"] is True
    )


def _names(decision):
    return [
        getattr(e, "name", None) or getattr(e, "func", None) or getattr(e, "action", None)
        for e in decision.effects
    ]


def test_effects_per_edge():
    d = message_reduce(
        message_id="m",
        frm="drafting",
        to="approved",
        input={"source": "auto", "send_delay_ms": 60000, "action_id": "a"},
        at=AT,
    )
    names = _names(d)
    assert "inbox.tasks.send_approved_reply_task" in names
    assert "increment_auto_reply" in names and "complete_action" in names and "thread_draft_status" in names
    send = next(e for e in d.effects if getattr(e, "func", "") == "inbox.tasks.send_approved_reply_task")
    assert send.at == AT + dt.timedelta(seconds=60)
    assert d.patch["pending_auto_send"]["send_at"] == send.at.isoformat()
    d = message_reduce(message_id="m", frm="draft_ready", to="approved", input={"source": "human"}, at=AT)
    assert "increment_auto_reply" not in _names(d)
    d = message_reduce(
        message_id="m", frm="classifying", to="failed", input={"failing_action_id": "a"}, at=AT
    )
    assert "fail_action" in _names(d)
    d = message_reduce(message_id="m", frm="failed", to="received", input={"reset_action_id": "a"}, at=AT)
    assert "reset_action" in _names(d) and "inbox.tasks.message_start_task" in _names(d)
    for to, status in (("draft_ready", "pending"), ("rejected", "rejected")):
        frm = "drafting" if to == "draft_ready" else "draft_ready"
        d = message_reduce(message_id="m", frm=frm, to=to, input={}, at=AT)
        assert any(getattr(e, "kwargs", {}).get("status") == status for e in d.effects)


# --- the runner on the database ------------------------------------------------------------------------------


def test_not_found(db):
    import uuid

    out = message_transition(message_id=uuid.uuid4(), to="archived")
    assert not out.ok and out.reason == "message_not_found"


def test_transition_writes_status_thread_and_audit(make_message, org):
    thread = ConversationThread.objects.create(organization=org, subject="x")
    m = make_message("draft_ready", thread=thread, draft_response="Hi")
    out = message_transition(
        message_id=m.pk, to="rejected", actor="user:1", input={"audit": "inbound.draft_rejected"}
    )
    assert out.ok and out.as_transition() == {
        "applied": "transitioned",
        "from": "draft_ready",
        "to": "rejected",
    }
    m.refresh_from_db()
    thread.refresh_from_db()
    assert m.processing_status == "rejected" and m.processed_at is not None
    assert thread.latest_draft_status == "rejected"
    assert AuditLog.objects.filter(
        action="inbound.draft_rejected", resource="inbound_message", resource_id=str(m.pk)
    ).exists()
    again = message_transition(message_id=m.pk, to="archived")
    assert not again.ok and again.reason == "terminal"


def test_approved_with_delay_writes_due_task_and_pending(make_message):
    m = make_message("draft_ready", draft_response="Hi")
    out = message_transition(
        message_id=m.pk, to="approved", input={"source": "human", "send_delay_ms": 15000}
    )
    assert out.ok
    m.refresh_from_db()
    assert m.pending_auto_send["task_id"]
    assert DueTask.objects.filter(func="inbox.tasks.send_approved_reply_task").count() == 1
    back = message_transition(message_id=m.pk, to="draft_ready")
    assert back.ok
    m.refresh_from_db()
    assert m.pending_auto_send is None


def test_auto_approval_increments_daily_counter(make_message, agent_config):
    m = make_message("drafting", draft_response="Hi")
    assert message_transition(message_id=m.pk, to="approved", input={"source": "auto"}).ok
    agent_config.refresh_from_db()
    assert (
        agent_config.daily_auto_reply_count == 1 and agent_config.daily_auto_reply_reset_at > timezone.now()
    )


def test_step_completion_and_failure_through_the_lifecycle(make_message):
    m = make_message("security_check")
    a = action_prepare(message=m, kind="security_scan")
    assert action_claim(a.pk)
    assert message_transition(
        message_id=m.pk,
        to="classifying",
        input={
            "action_id": str(a.pk),
            "output": {"x": 1},
            "duration_ms": 7,
            "model_used": "m",
            "token_usage": {"totalTokens": 3},
        },
    ).ok
    a.refresh_from_db()
    assert a.status == "completed" and a.duration_ms == 7 and a.model_used == "m" and a.output == {"x": 1}
    b = action_prepare(message=m, kind="context_retrieval")
    assert action_claim(b.pk)
    assert message_transition(
        message_id=m.pk, to="failed", input={"error_message": "boom", "failing_action_id": str(b.pk)}
    ).ok
    b.refresh_from_db()
    assert b.status == "failed" and b.retry_count == 1 and b.error_message == "boom"


def test_claim_is_compare_and_set(make_message):
    m = make_message("security_check")
    a = action_prepare(message=m, kind="security_scan")
    assert action_claim(a.pk)
    assert not action_claim(a.pk)  # a duplicate task loses


def test_stale_running_claim_is_reclaimed_after_the_lease(make_message, settings):
    settings.INBOX_STEP_LEASE_SECONDS = 60
    m = make_message("security_check")
    a = action_prepare(message=m, kind="security_scan")
    t0 = timezone.now()
    assert action_claim(a.pk, at=t0)
    assert not action_claim(a.pk, at=t0 + dt.timedelta(seconds=30))
    assert action_claim(a.pk, at=t0 + dt.timedelta(seconds=61))


def test_reset_row_is_reused_and_the_cap_holds(make_message):
    """AGT-09 [project]: the reset row is reused, so the retry count accumulates and the third failure abandons."""
    m = make_message("classifying")
    first = action_prepare(message=m, kind="classify")
    statuses = []
    for attempt in range(MAX_RETRY_ATTEMPTS):
        row = action_prepare(message=m, kind="classify")
        assert row.pk == first.pk
        assert action_claim(row.pk)
        statuses.append(action_fail(row.pk, error=f"attempt {attempt}"))
        if attempt < MAX_RETRY_ATTEMPTS - 1:
            assert action_reset(row.pk)
    assert statuses == ["failed", "failed", "abandoned"]
    first.refresh_from_db()
    assert first.retry_count == 3 and first.status == ActionStatus.ABANDONED
    assert AgentAction.objects.filter(inbound_message=m).count() == 1


def test_completed_action_is_not_completed_twice(make_message):
    m = make_message("classifying")
    a = action_prepare(message=m, kind="context_retrieval")
    action_claim(a.pk)
    assert action_complete(a.pk, output={})
    assert not action_complete(a.pk, output={})


def test_status_field_is_protected(make_message):
    m = make_message("received")
    with pytest.raises(AttributeError):
        m.processing_status = "sent"
    assert InboundMessage.objects.get(pk=m.pk).processing_status == "received"
