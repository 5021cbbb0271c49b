"""The pure reducers of run and step-run statuses (AUT-04, AUT-21, AUT-23, AUT-26, AUT-28): every legal and
illegal edge, without a database."""

from __future__ import annotations

import datetime as dt
import itertools

import pytest

from automations.lifecycle import RUN_EDGES, STEP_RUN_EDGES, run_reduce, step_run_reduce
from owlat.lifecycle import Call

AT = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
RUN_STATES = ("running", "completed", "cancelled")
STEP_STATES = ("pending", "executing", "completed", "failed", "skipped")


def test_the_declared_graphs():
    assert {("running", "completed"), ("running", "cancelled")} == RUN_EDGES
    assert {
        ("pending", "executing"),
        ("pending", "failed"),
        ("pending", "skipped"),
        ("executing", "completed"),
        ("executing", "failed"),
    } == STEP_RUN_EDGES


# --- runs ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("to", ["completed", "cancelled"])
def test_a_running_run_finishes_with_completed_at_and_is_counted(to):
    d = run_reduce(frm="running", to=to, at=AT)
    assert (d.ok, d.applied) == (True, "transitioned")
    assert d.patch == {"status": to, "completed_at": AT, "next_step_at": None}
    assert d.effects == (Call("count", {"to": to}),)


@pytest.mark.parametrize(("frm", "to"), [(f, t) for f, t in itertools.product(RUN_STATES, RUN_STATES)])
def test_every_run_move(frm, to):
    d = run_reduce(frm=frm, to=to, at=AT)
    if (frm, to) in RUN_EDGES:
        assert d.ok and d.applied == "transitioned"
    elif frm == to and frm != "running":
        # AUT-28: finishing a finished run again is a no-op
        assert (d.ok, d.applied, d.patch, d.effects) == (True, "duplicate", {}, ())
    elif frm == "running":
        assert (d.ok, d.reason) == (False, "illegal_edge")  # running → running
    else:
        assert (d.ok, d.reason) == (False, "not_running")  # completed ↔ cancelled


# --- step runs ----------------------------------------------------------------------------------------------


def reduce(frm, to, *, row=(0, 0), **input):
    """`row` = the step run's (retry_count, attempt); keyword arguments are the move's input."""
    return step_run_reduce(frm=frm, to=to, retry_count=row[0], attempt=row[1], input=input, at=AT)


def test_claim_pending_to_executing():
    d = reduce("pending", "executing")
    assert (d.ok, d.applied, d.guard) == (True, "transitioned", {})
    assert d.patch == {"status": "executing", "started_at": AT, "attempt": 0}
    assert d.effects == (Call("count", {"frm": "pending", "to": "executing"}),)


@pytest.mark.parametrize("frm", ["executing", "completed", "failed", "skipped"])
def test_a_fresh_claim_of_anything_but_pending_is_refused(frm):
    assert (reduce(frm, "executing").ok, reduce(frm, "executing").reason) == (False, "not_claimable")


def test_retry_claim_takes_the_attempt_under_a_guard():
    # retry 2 was scheduled (retry_count 2) by attempt 1, which still holds the row
    d = reduce("executing", "executing", row=(2, 1), retry_count=2)
    assert (d.ok, d.applied) == (True, "recorded")
    assert d.patch == {"attempt": 2}
    assert d.guard == {"retry_count": 2, "attempt": 1}
    assert d.effects == ()  # not a status change: no counter moves


@pytest.mark.parametrize(
    ("frm", "row_retry_count", "row_attempt", "wanted"),
    [
        ("executing", 2, 2, 2),  # a second delivery of retry 2: attempt 2 already took it
        ("executing", 3, 2, 2),  # a stale retry 2 after retry 3 was scheduled
        ("executing", 1, 0, 2),  # retry 2 before it was scheduled
        ("pending", 1, 0, 1),
        ("completed", 1, 1, 1),
        ("failed", 3, 3, 3),
        ("skipped", 0, 0, 1),
    ],
)
def test_retry_claims_that_must_lose(frm, row_retry_count, row_attempt, wanted):
    d = reduce(frm, "executing", row=(row_retry_count, row_attempt), retry_count=wanted)
    assert (d.ok, d.reason) == (False, "not_claimable")


def test_complete_by_the_holding_attempt():
    d = reduce("executing", "completed", row=(1, 1), attempt=1, email_send_id="s1", note=None)
    assert (d.ok, d.applied) == (True, "transitioned")
    assert d.patch == {"status": "completed", "completed_at": AT, "email_send_id": "s1", "note": None}
    assert d.guard == {"attempt": 1}
    assert d.effects == (Call("count", {"frm": "executing", "to": "completed"}),)


def test_complete_by_another_attempt_is_refused():
    d = reduce("executing", "completed", row=(2, 2), attempt=1)
    assert (d.ok, d.reason) == (False, "not_owner")


@pytest.mark.parametrize("frm", ["pending", "executing"])
def test_fail_records_the_error_and_retry_count(frm):
    d = reduce(frm, "failed", error="boom", retry_count=3)
    assert d.ok and d.applied == "transitioned"
    assert d.patch == {"status": "failed", "completed_at": AT, "error_message": "boom", "retry_count": 3}
    assert d.effects == (Call("count", {"frm": frm, "to": "failed"}),)
    assert reduce(frm, "failed", error="boom").patch == {
        "status": "failed",
        "completed_at": AT,
        "error_message": "boom",
    }


def test_skip_pending_and_created_skipped():
    d = reduce("pending", "skipped")
    assert d.ok and d.patch == {"status": "skipped", "completed_at": AT}
    assert d.effects == (Call("count", {"frm": "pending", "to": "skipped"}),)
    # a row created through the edge was never counted as pending
    assert reduce("pending", "skipped", created=True).effects == (
        Call("count", {"frm": None, "to": "skipped"}),
    )


@pytest.mark.parametrize(
    ("frm", "to"),
    [(f, t) for f, t in itertools.product(STEP_STATES, STEP_STATES) if t != "executing"],
)
def test_every_other_step_run_move(frm, to):
    d = reduce(frm, to)
    if (frm, to) in STEP_RUN_EDGES:
        assert d.ok and d.applied == "transitioned" and d.patch["status"] == to
    elif frm == to and frm in ("completed", "failed", "skipped"):
        assert (d.ok, d.applied, d.patch, d.effects) == (True, "duplicate", {}, ())  # AUT-21: ignored
    elif frm in ("completed", "failed", "skipped"):
        assert (d.ok, d.reason) == (False, "terminal")
    else:
        assert (d.ok, d.reason) == (False, "illegal_edge")  # pending → completed, executing → pending, …
