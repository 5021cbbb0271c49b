"""Both lifecycles: every edge and refusal, effects per edge, self-loops, actors and analytics, racing callers."""

from __future__ import annotations

import datetime as dt

import pytest

from campaigns.ab_lifecycle import LEGAL_EDGES as AB_EDGES
from campaigns.ab_lifecycle import ab_reduce, ab_transition
from campaigns.lifecycle import (
    LEGAL_EDGES,
    ORCHESTRATOR_TASK,
    audit_action,
    campaign_reduce,
    campaign_transition,
)
from owlat.lifecycle import Analytics, Audit, Call, Enqueue
from owlat.permissions import Authority
from testsupport.race import race

AT = dt.datetime(2026, 3, 1, 12, 0, tzinfo=dt.UTC)
STATES = ["draft", "scheduled", "sending", "sent", "cancelled", "pending_review", "paused"]
EXPECTED_EDGES = {
    ("draft", "scheduled"),
    ("draft", "sending"),
    ("scheduled", "draft"),
    ("scheduled", "cancelled"),
    ("scheduled", "sending"),
    ("sending", "sent"),
    ("sending", "draft"),
    ("sending", "pending_review"),
    ("pending_review", "sending"),
    ("pending_review", "draft"),
    # pause, resume and cancel of a send (beyond the spec's ten)
    ("sending", "paused"),
    ("paused", "sending"),
    ("sending", "cancelled"),
    ("paused", "cancelled"),
}


def reduce(frm, to, *, actor="user-1", is_ab_test=False, **input):
    return campaign_reduce(
        frm=frm, to=to, campaign_id="c1", is_ab_test=is_ab_test, input=input, actor=actor, at=AT
    )


def kinds(decision, kind):
    return [e for e in decision.effects if isinstance(e, kind)]


# --- pure reducer -----------------------------------------------------------------------------------------------


def test_the_graph_has_the_ten_spec_edges_and_pause_resume_cancel():
    assert {(str(a), str(b)) for a, b in LEGAL_EDGES} == EXPECTED_EDGES


@pytest.mark.parametrize("frm", STATES)
@pytest.mark.parametrize("to", STATES)
def test_every_non_edge_is_refused_with_the_right_reason(frm, to):
    if frm == to or (frm, to) in EXPECTED_EDGES:
        return
    decision = reduce(frm, to)
    assert not decision.ok
    assert decision.reason == ("terminal" if frm in ("sent", "cancelled") else "illegal_edge")
    assert decision.effects == ()


@pytest.mark.parametrize(
    ("frm", "to", "action"),
    [
        ("draft", "scheduled", "campaign.scheduled"),
        ("scheduled", "draft", "campaign.unscheduled"),
        ("sending", "draft", "campaign.content_blocked"),
        ("pending_review", "draft", "campaign.review_rejected"),
        ("scheduled", "cancelled", "campaign.cancelled"),
        ("pending_review", "sending", "campaign.review_approved"),
        ("draft", "sending", "campaign.send_started"),
        ("scheduled", "sending", "campaign.send_started"),
        ("sending", "sent", "campaign.sent"),
        ("sending", "pending_review", "campaign.flagged_for_review"),
    ],
)
def test_each_edge_writes_its_audit_action(frm, to, action):
    extra = {"scheduled_at": AT + dt.timedelta(hours=1)} if to == "scheduled" else {}
    decision = reduce(frm, to, **extra)
    assert decision.ok
    [audit] = kinds(decision, Audit)
    assert audit.action == action == audit_action(frm, to)
    assert audit.details["previousStatus"] == frm and audit.details["newStatus"] == to
    assert audit.details["applied"] == "transitioned"


def test_to_scheduled_patch_and_delayed_orchestrator():
    when = AT + dt.timedelta(hours=2)
    d = reduce(
        "draft",
        "scheduled",
        scheduled_at=when,
        use_recipient_timezone=True,
        scheduled_hour=9,
        scheduled_minute=0,
    )
    assert d.patch == {
        "status": "scheduled",
        "scheduled_at": when,
        "use_recipient_timezone": True,
        "scheduled_hour": 9,
        "scheduled_minute": 0,
    }
    [enq] = kinds(d, Enqueue)
    assert enq.func == ORCHESTRATOR_TASK and enq.args == ("c1",) and enq.at == when
    assert kinds(d, Audit)[0].details["scheduledAt"] == when.isoformat()
    assert [a.event for a in kinds(d, Analytics)] == ["campaign_scheduled"]


def test_to_scheduled_in_the_past_runs_the_orchestrator_now():
    d = reduce("draft", "scheduled", scheduled_at=AT - dt.timedelta(minutes=1))
    assert kinds(d, Enqueue)[0].at is None
    assert d.patch["use_recipient_timezone"] is False


def test_to_sending_resets_counters_and_schedules_one_orchestrator_run():
    d = reduce("scheduled", "sending")
    assert d.patch["sent_at"] == AT and d.patch["scheduled_at"] is None
    assert d.patch["content_block_reason"] is None
    assert all(d.patch[f] == 0 for f in d.patch if f.startswith("stats_") and f != "stats_updated_at")
    assert len([k for k in d.patch if k.startswith("stats_") and k != "stats_updated_at"]) == 9
    assert [e.func for e in kinds(d, Enqueue)] == [ORCHESTRATOR_TASK]
    assert kinds(d, Enqueue)[0].at is None
    assert [c.name for c in kinds(d, Call)] == ["reset_send_counters"]
    assert [a.event for a in kinds(d, Analytics)] == ["campaign_sent"]


def test_sending_does_not_start_the_ab_window():
    """The A/B window starts when the orchestrator opens the test-cohort walk (after the scan and any review),
    not on → sending: a review longer than the window must not declare a winner without data."""
    for actor in ("system:scheduler_tick", "user-7"):
        d = reduce("draft", "sending", is_ab_test=True, actor=actor)
        assert [c.name for c in kinds(d, Call)] == ["reset_send_counters"]


def test_review_approval_sends_without_campaign_sent_event():
    d = reduce("pending_review", "sending", actor="staff-1")
    assert kinds(d, Analytics) == []
    assert [e.func for e in kinds(d, Enqueue)] == [ORCHESTRATOR_TASK]


def test_to_draft_patches():
    assert reduce("scheduled", "draft").patch == {"status": "draft", "scheduled_at": None}
    d = reduce("sending", "draft", actor="system:content_scan", content_block_reason="Content blocked: x")
    assert d.patch == {"status": "draft", "content_block_reason": "Content blocked: x"}
    assert kinds(d, Audit)[0].details["contentBlockReason"] == "Content blocked: x"
    assert kinds(d, Enqueue) == [] and kinds(d, Analytics) == []


def test_cancel_patch_and_event():
    d = reduce("scheduled", "cancelled")
    assert d.patch == {"status": "cancelled", "cancelled_at": AT, "scheduled_at": None}
    assert [a.event for a in kinds(d, Analytics)] == ["campaign_cancelled"]
    assert kinds(d, Analytics)[0].properties == {"campaignId": "c1"}


@pytest.mark.parametrize("to", ["sent", "pending_review"])
def test_status_only_patches(to):
    d = reduce("sending", to, actor="system:orchestrator")
    assert d.patch == {"status": to}
    assert kinds(d, Enqueue) == [] and kinds(d, Analytics) == []


@pytest.mark.parametrize("actor", ["system", "system:scheduler_tick", "system:auto_winner"])
@pytest.mark.parametrize(
    ("frm", "to"), [("draft", "scheduled"), ("draft", "sending"), ("scheduled", "cancelled")]
)
def test_system_actors_emit_no_analytics(actor, frm, to):
    extra = {"scheduled_at": AT + dt.timedelta(hours=1)} if to == "scheduled" else {}
    assert kinds(reduce(frm, to, actor=actor, **extra), Analytics) == []


# --- runner on the database -----------------------------------------------------------------------------------


def _audits(campaign, action=None):
    from owlat.models import AuditLog

    qs = AuditLog.objects.filter(resource="campaign", resource_id=str(campaign.pk)).order_by(
        "created_at", "id"
    )
    if action:
        qs = qs.filter(action=action)
    return list(qs)


def _orchestrator_tasks():
    from testsupport.queue import queued_tasks

    return [t for t in queued_tasks("default") if t.func == ORCHESTRATOR_TASK]


def test_transition_applies_patch_audit_and_enqueues_in_one_transaction(make_campaign):
    campaign = make_campaign()
    outcome = campaign_transition(campaign_id=campaign.pk, to="sending", actor="user-1")
    assert outcome.ok and outcome.applied == "transitioned"
    campaign.refresh_from_db()
    assert campaign.status == "sending" and campaign.sent_at is not None
    assert [a.user_id for a in _audits(campaign, "campaign.send_started")] == ["user-1"]
    assert len(_orchestrator_tasks()) == 1


def test_scheduled_transition_writes_a_due_task(make_campaign):
    from owlat.models import DueTask

    campaign = make_campaign()
    when = dt.datetime.now(dt.UTC) + dt.timedelta(hours=3)
    outcome = campaign_transition(
        campaign_id=campaign.pk, to="scheduled", actor="user-1", input={"scheduled_at": when}
    )
    assert outcome.ok
    due = DueTask.objects.get(func=ORCHESTRATOR_TASK)
    assert due.args == [str(campaign.pk)] and due.due_at == when and due.queue == "default"


def test_self_loop_records_one_audit_row_and_nothing_else(make_campaign):
    campaign = make_campaign()
    campaign_transition(campaign_id=campaign.pk, to="sending", actor="user-1")
    before_tasks = len(_orchestrator_tasks())
    campaign.refresh_from_db()
    sent_at = campaign.sent_at
    outcome = campaign_transition(campaign_id=campaign.pk, to="sending", actor="system:scheduler_tick")
    assert outcome.ok and outcome.applied == "recorded"
    campaign.refresh_from_db()
    assert campaign.sent_at == sent_at
    assert len(_orchestrator_tasks()) == before_tasks
    rows = _audits(campaign, "campaign.send_started")
    assert len(rows) == 2
    assert rows[-1].details["applied"] == "recorded" and rows[-1].user_id == "system:scheduler_tick"


def test_refusals_from_the_runner(make_campaign):
    campaign = make_campaign()
    outcome = campaign_transition(campaign_id=campaign.pk, to="sent", actor="user-1")
    assert not outcome.ok and outcome.reason == "illegal_edge"
    assert campaign_transition(campaign_id=campaign.pk, to="sending", actor="u").ok
    assert campaign_transition(campaign_id=campaign.pk, to="sent", actor="system:send_completion").ok
    outcome = campaign_transition(campaign_id=campaign.pk, to="draft", actor="user-1")
    assert not outcome.ok and outcome.reason == "terminal"
    import uuid

    missing = campaign_transition(campaign_id=uuid.uuid4(), to="sending", actor="u")
    assert not missing.ok and missing.reason == "campaign_not_found"


def test_sending_resets_delivery_counters(make_campaign):
    from delivery.models import CampaignSendCounters

    campaign = make_campaign()
    CampaignSendCounters.objects.create(
        campaign_id=campaign.pk, organization_id=campaign.organization_id, sent=5
    )
    campaign_transition(campaign_id=campaign.pk, to="sending", actor="u")
    assert CampaignSendCounters.objects.get(campaign_id=campaign.pk).sent == 0


def test_analytics_per_actor(make_campaign, settings, monkeypatch):
    from owlat import analytics

    captured = []
    monkeypatch.setattr(analytics, "capture", lambda **kw: captured.append(kw))
    campaign = make_campaign()
    campaign_transition(campaign_id=campaign.pk, to="sending", actor="system:scheduler_tick")
    assert [c["event"] for c in captured if c["event"] != "campaign_created"] == []
    other = make_campaign()
    campaign_transition(campaign_id=other.pk, to="sending", actor="user-9")
    assert [c["event"] for c in captured if c["event"] == "campaign_sent"] == ["campaign_sent"]
    assert captured[-1]["distinct_id"] == "user-9"


@pytest.mark.django_db(transaction=True)
def test_racing_callers_one_wins(make_campaign):
    campaign = make_campaign()
    results = race(lambda _: campaign_transition(campaign_id=campaign.pk, to="sending", actor="user-1"))
    assert sorted(o.applied for o in results) == ["recorded", "transitioned"]
    assert len(_orchestrator_tasks()) == 1


# --- A/B lifecycle ---------------------------------------------------------------------------------------------

CONFIG = {
    "testType": "subject",
    "variantBSubject": "B!",
    "splitPercentage": 20,
    "winnerCriteria": "open_rate",
    "testDuration": 4,
}


def test_ab_graph():
    assert {
        (None, "pending"),
        ("pending", "testing"),
        ("testing", "winner_selected"),
        ("pending", None),
        ("testing", None),
        ("winner_selected", None),
    } == set(AB_EDGES)


@pytest.mark.parametrize(
    ("frm", "to"),
    [
        (None, "testing"),
        (None, "winner_selected"),
        ("pending", "winner_selected"),
        ("testing", "pending"),
        ("winner_selected", "testing"),
        ("winner_selected", "pending"),
    ],
)
def test_ab_illegal_edges(frm, to):
    d = ab_reduce(frm=frm, to=to, campaign_id="c1", config=CONFIG, input={}, at=AT)
    assert not d.ok and d.reason == "illegal_edge"


def test_ab_effects_per_edge():
    d = ab_reduce(frm=None, to="pending", campaign_id="c1", config=None, input={"config": CONFIG}, at=AT)
    assert d.patch["is_ab_test"] is True and d.patch["ab_test_config"] == CONFIG
    assert kinds(d, Audit)[0].action == "ab_test.enabled"
    d = ab_reduce(frm="pending", to="testing", campaign_id="c1", config=CONFIG, input={}, at=AT)
    [auto] = kinds(d, Enqueue)
    assert auto.func.endswith("campaign_ab_auto_winner_task") and auto.at == AT + dt.timedelta(hours=4)
    assert kinds(d, Audit)[0].action == "ab_test.testing_started"
    manual = {**CONFIG, "winnerCriteria": "manual"}
    assert (
        kinds(
            ab_reduce(frm="pending", to="testing", campaign_id="c1", config=manual, input={}, at=AT), Enqueue
        )
        == []
    )
    no_window = {**CONFIG, "testDuration": 0}
    assert (
        kinds(
            ab_reduce(frm="pending", to="testing", campaign_id="c1", config=no_window, input={}, at=AT),
            Enqueue,
        )
        == []
    )
    d = ab_reduce(
        frm="testing", to="winner_selected", campaign_id="c1", config=CONFIG, input={"winner": "B"}, at=AT
    )
    assert d.patch["ab_winner"] == "B" and d.patch["ab_winner_selected_at"] == AT
    assert (
        kinds(d, Audit)[0].action == "ab_test.winner_declared" and kinds(d, Audit)[0].details["winner"] == "B"
    )
    assert (
        kinds(d, Enqueue)[0].func.endswith("campaign_send_remainder_task") and kinds(d, Enqueue)[0].at is None
    )
    d = ab_reduce(frm="testing", to=None, campaign_id="c1", config=CONFIG, input={}, at=AT)
    assert d.patch == {
        "ab_test_status": None,
        "is_ab_test": False,
        "ab_test_config": None,
        "ab_winner": None,
        "ab_winner_selected_at": None,
    }
    assert kinds(d, Audit)[0].action == "ab_test.disabled"


def test_ab_lifecycle_on_the_database(make_campaign):
    from campaigns.abtest import ab_disable, ab_enable

    campaign = make_campaign()
    assert ab_enable(campaign=campaign, config=CONFIG, actor="u", authority=Authority.member("owner")).ok
    campaign.refresh_from_db()
    assert campaign.ab_test_status == "pending" and campaign.is_ab_test
    # → sending leaves it pending; the orchestrator's walk start moves it to testing, with the auto-winner
    from campaigns.orchestrator import start_campaign_send
    from owlat.models import AuditLog, DueTask

    campaign_transition(campaign_id=campaign.pk, to="sending", actor="u")
    campaign.refresh_from_db()
    assert campaign.ab_test_status == "pending"
    assert start_campaign_send(campaign.pk) == "send job opened"
    campaign.refresh_from_db()
    assert campaign.ab_test_status == "testing"
    assert DueTask.objects.filter(func__endswith="campaign_ab_auto_winner_task").count() == 1
    assert AuditLog.objects.get(action="ab_test.testing_started").user_id == "system:orchestrator"
    # self-loop
    out = ab_transition(campaign_id=campaign.pk, to="testing", actor="u")
    assert out.ok and out.applied == "recorded"
    # disable is draft-only in the wrapper, but the lifecycle edge any → none exists
    assert not ab_disable(campaign=campaign, actor="u", authority=Authority.member("owner")).ok
    out = ab_transition(campaign_id=campaign.pk, to=None, actor="u")
    assert out.ok and out.applied == "transitioned"
    campaign.refresh_from_db()
    assert campaign.ab_test_status is None and not campaign.is_ab_test and campaign.ab_test_config is None


def test_pause_resume_and_cancel_of_a_send():
    d = reduce("sending", "paused")
    assert d.patch == {"status": "paused", "paused_at": AT} and not kinds(d, Enqueue)
    assert kinds(d, Audit)[0].action == "campaign.paused"
    d = reduce("paused", "sending")
    assert d.patch == {"status": "sending", "paused_at": None}  # no counter reset, no new orchestrator run
    assert [c.name for c in kinds(d, Call)] == ["resume_send"] and not kinds(d, Enqueue)
    assert kinds(d, Audit)[0].action == "campaign.resumed"
    for frm in ("sending", "paused"):
        d = reduce(frm, "cancelled")
        assert [c.name for c in kinds(d, Call)] == ["cancel_send"]
    assert not kinds(reduce("scheduled", "cancelled"), Call)
