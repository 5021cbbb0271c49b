"""inbox.sql's written-out statements and the ORM statements their callers keep for other databases give the same
rows: each test runs once per path (`written_out` on PostgreSQL only; `orm` on both databases)."""

from __future__ import annotations

from unittest import mock

import pytest
from django.db import connection, transaction
from django.utils import timezone

from inbox import sql as inbox_sql
from inbox.breakers import _locked, llm_failure_record, open_breaker
from inbox.lifecycle import action_claim, action_complete, action_prepare, message_record
from inbox.lifecycle.messages import _effect_thread_draft_status
from inbox.models import ActionStatus, AgentAction, ConversationThread, HandlingRule
from inbox.rules import rules_for
from inbox.steps.context import _recent_activities, thread_history
from inbox.walker import _config_locked, _lock, _start_load, _step_load
from owlat.models import Contact, ContactActivity, OrganizationSettings


@pytest.fixture(params=["written_out", "orm"])
def path(request, db):
    if request.param == "written_out" and connection.vendor != "postgresql":
        pytest.skip("the written-out statements run on PostgreSQL only")
    with mock.patch.object(inbox_sql, "enabled", return_value=request.param == "written_out"):
        yield request.param


def test_an_action_is_inserted_claimed_and_completed_alike_on_both_paths(path, make_message):
    message = make_message("classifying")
    action = action_prepare(message=message, kind="classify", input={"a": 1}, reuse=False)
    stored = AgentAction.objects.get(pk=action.pk)
    assert (stored.status, stored.input, stored.retry_count) == (ActionStatus.PENDING, {"a": 1}, 0)
    assert action_claim(action.pk) is True
    assert action_claim(action.pk) is False  # a running row within its lease is not claimed twice
    assert action_complete(action.pk, output={"ok": True}, duration_ms=12, model_used="m") is True
    assert action_complete(action.pk, output={"ok": False}, duration_ms=1) is False
    stored.refresh_from_db()
    assert (stored.status, stored.output, stored.duration_ms, stored.model_used) == (
        ActionStatus.COMPLETED,
        {"ok": True},
        12,
        "m",
    )


def test_companion_fields_are_recorded_only_in_the_expected_status(path, make_message):
    message = make_message("drafting")
    assert message_record(message.pk, expect_status="drafting", draft_response="Hi", confidence_score=0.7)
    assert not message_record(message.pk, expect_status="classifying", draft_response="No")
    message.refresh_from_db()
    assert (message.draft_response, message.confidence_score) == ("Hi", 0.7)


def test_the_threads_draft_status_is_written(path, org, make_message):
    thread = ConversationThread.objects.create(organization=org, subject="Invoice")
    message = make_message("drafting", thread=thread)
    _effect_thread_draft_status(message, status="pending")
    thread.refresh_from_db()
    assert thread.latest_draft_status == "pending"


def test_active_rules_are_read_in_order(path, org):
    HandlingRule.objects.create(
        organization=org, name="b", match="sender", value="x@y.test", action="archive"
    )
    HandlingRule.objects.create(
        organization=org, name="a", match="sender", value="z@y.test", action="archive"
    )
    HandlingRule.objects.create(
        organization=org, name="off", match="sender", value="o@y.test", action="archive", is_active=False
    )
    assert [r["name"] for r in rules_for(org.pk)] == ["a", "b"]


def test_recent_activities_and_thread_history_are_read(path, org, make_message):
    contact = Contact.objects.create(organization=org, email="jane@example.com")
    for kind in ("email_opened", "email_clicked"):
        ContactActivity.objects.create(
            organization=org, contact=contact, activity_type=kind, occurred_at=timezone.now()
        )
    assert [a for a, _ in _recent_activities(contact.pk, org.pk)] == ["email_clicked", "email_opened"]
    thread = ConversationThread.objects.create(organization=org, subject="Invoice")
    earlier = make_message("sent", thread=thread, contact=contact)
    make_message("quarantined", thread=thread, contact=contact)
    current = make_message("classifying", thread=thread, contact=contact)
    assert [m.pk for m in thread_history(current)] == [earlier.pk]


def test_breakers_are_read_locked_and_saved(path, org):
    assert open_breaker(org.pk) is None
    with transaction.atomic():
        row = _locked(org.pk, "llm_failure")
    assert row.opened_at is None
    for _ in range(5):
        llm_failure_record(org.pk)
    opened = open_breaker(org.pk)
    assert opened is not None and opened.kind == "llm_failure" and opened.trip_count == 1


def test_the_walkers_loads_read_the_message_its_action_and_config(path, org, agent_config, make_message):
    message = make_message("received")
    action = action_prepare(message=message, kind="scan", reuse=False)
    with transaction.atomic():
        loaded, config, flags = _start_load(message.pk)
        stored_flags = OrganizationSettings.objects.get(organization=org).feature_flags
        assert (loaded.pk, config.pk, loaded.pending_actions) == (message.pk, agent_config.pk, True)
        assert flags == stored_flags and flags
        assert _lock(message.pk).pk == message.pk
        assert _config_locked(agent_config.pk).pk == agent_config.pk
    step, config, others_pending = _step_load(message.pk, action.pk)
    assert (step.pk, step.inbound_message.pk, config.pk, others_pending) == (
        action.pk,
        message.pk,
        agent_config.pk,
        False,
    )
