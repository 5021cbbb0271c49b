"""Agent circuit breakers (AGT-20): what trips each one, that an open breaker pauses auto-send (route → human
review) and cancels pending autonomous sends, the cooldown (half-open) and the operator reset in the admin."""

from __future__ import annotations

import datetime as dt

import pytest
from django.urls import reverse
from django.utils import timezone

from inbox import breakers
from inbox.breakers import (
    breaker_close,
    draft_quality_record,
    llm_failure_record,
    open_breaker,
    review_decision_record,
)
from inbox.models import AgentConfig, CircuitBreaker, InboundMessage
from inbox.review import message_reject
from owlat.models import Membership

pytestmark = pytest.mark.django_db


def test_llm_failures_trip_only_within_the_window(org):
    old = timezone.now() - dt.timedelta(minutes=11)
    for _ in range(4):
        assert not llm_failure_record(org.pk, now=old)
    assert not llm_failure_record(org.pk)  # the old four fell out of the 10-minute window
    for _ in range(3):
        assert not llm_failure_record(org.pk)
    assert llm_failure_record(org.pk)
    breaker = open_breaker(org.pk)
    assert breaker.kind == "llm_failure" and breaker.reason == "5 model calls failed within 10 minutes."
    assert breaker.trip_count == 1


def test_failing_model_steps_trip_the_llm_breaker(ai_org, llm_server, receive, run_pipeline):
    llm_server.statuses["classify"] = 500
    for i in range(5):
        receive(subject=f"Question {i}")
    run_pipeline()
    assert InboundMessage.objects.filter(processing_status="failed").count() == 5
    assert open_breaker(ai_org.pk).kind == "llm_failure"


def test_confidence_degradation_needs_enough_low_scores(org):
    for _ in range(9):
        assert not draft_quality_record(org.pk, 0.3)
    assert draft_quality_record(org.pk, 0.3)  # ten drafts, mean 0.3 < 0.5
    assert "Mean draft quality 0.30 over the last 10 drafts" in open_breaker(org.pk).reason


def test_good_drafts_keep_the_confidence_breaker_closed(org):
    for _ in range(25):
        assert not draft_quality_record(org.pk, 0.9)
    row = CircuitBreaker.objects.get(organization=org, kind="confidence_degradation")
    assert len(row.samples) == breakers.QUALITY_WINDOW and row.opened_at is None


def test_rejection_spike_from_human_rejections(org, make_message):
    review_decision_record(org.pk, "approved")
    for i in range(5):
        m = make_message("draft_ready", draft_response=f"Agent draft {i}")
        assert message_reject(message_id=m.pk, organization_id=org.pk, actor="user:1").ok
    breaker = open_breaker(org.pk)
    assert (
        breaker.kind == "rejection_spike"
        and breaker.reason == "5 of the last 6 reviewed drafts were rejected."
    )


def test_rejecting_an_operator_written_reply_is_no_verdict_on_the_agent(org, make_message):
    for _ in range(6):
        m = make_message("draft_ready", draft_response="")
        assert message_reject(message_id=m.pk, organization_id=org.pk, actor="user:1").ok
    assert open_breaker(org.pk) is None


def test_tripping_cancels_pending_autonomous_sends(org, make_message, django_capture_on_commit_callbacks):
    m = make_message(
        "approved",
        approval_source="auto",
        draft_response="Hi",
        pending_auto_send={"task_id": "t", "send_at": timezone.now().isoformat(), "scheduled_at": "x"},
    )
    human = make_message(
        "approved", approval_source="human", draft_response="Hi", pending_auto_send={"task_id": "h"}
    )
    with django_capture_on_commit_callbacks(execute=True):
        for _ in range(5):
            llm_failure_record(org.pk)
    assert InboundMessage.objects.get(pk=m.pk).processing_status == "draft_ready"
    assert InboundMessage.objects.get(pk=human.pk).processing_status == "approved"


def test_cooldown_closes_half_open_and_a_bad_observation_trips_again(org):
    for _ in range(5):
        llm_failure_record(org.pk)
    later = timezone.now() + breakers.COOLDOWN + dt.timedelta(seconds=1)
    assert open_breaker(org.pk, now=later) is None
    row = CircuitBreaker.objects.get(organization=org, kind="llm_failure")
    assert row.is_open() and not row.is_open(later)
    for _ in range(4):
        llm_failure_record(org.pk, now=later)
    assert llm_failure_record(org.pk, now=later)  # five fresh failures: open again
    assert CircuitBreaker.objects.get(pk=row.pk).trip_count == 2


def test_operator_closes_a_breaker_in_the_admin(client, django_user_model, org):
    AgentConfig.objects.get_or_create(organization=org)
    for _ in range(5):
        llm_failure_record(org.pk)
    row = CircuitBreaker.objects.get(organization=org, kind="llm_failure")
    user = django_user_model.objects.create_user(username="ann", password="pw", is_staff=True)
    Membership.objects.create(user=user, organization=org, role="owner")
    client.force_login(user)
    page = client.get(reverse("admin:inbox_circuitbreaker_change", args=[row.pk])).content.decode()
    assert "open — auto-send paused" in page and "5 model calls failed" in page
    close = reverse("admin:inbox_circuitbreaker_close", args=[row.pk])
    assert close in page
    config_page = client.get(
        reverse("admin:inbox_agentconfig_change", args=[AgentConfig.objects.get(organization=org).pk])
    ).content.decode()
    assert "llm_failure" in config_page and "is open until" in config_page
    assert client.get(close).status_code == 405
    response = client.post(close, follow=True)
    assert "closed" in response.content.decode()
    row.refresh_from_db()
    assert row.opened_at is None and row.samples == [] and open_breaker(org.pk) is None
    assert breaker_close(row.pk, organization_id=None) is not False  # idempotent
