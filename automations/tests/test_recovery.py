"""Step runs abandoned by a dead worker (automations/recovery.py, issue 13 item 8): claimed `executing`, then
the worker died before the step's effects and completion committed."""

from __future__ import annotations

import datetime as dt

import pytest
from django.utils import timezone

from automations.lifecycle import step_runs_claim_due
from automations.models import AutomationStepRun
from automations.recovery import WORKER_LOST, abandoned_step_runs_recover, executing_lease
from automations.tests.conftest import DELAY_1H
from automations.tests.test_walker import EXECUTE, due_rows, enter, fast_forward, step_runs
from automations.walker import run_start
from owlat.jobs import run_sweeps
from testsupport import drain_queue

pytestmark = pytest.mark.django_db


def test_a_step_run_left_executing_is_retried_after_the_lease_and_then_completes(make_automation, contact):
    automation = make_automation([DELAY_1H, DELAY_1H], status="active")
    run = enter(automation, contact)
    run_start(run.pk)
    [sr] = step_runs(run)
    AutomationStepRun.objects.filter(pk=sr.pk).update(delay_until=timezone.now())
    [claimed] = step_runs_claim_due(at=timezone.now(), limit=1, ids=[sr.pk])  # …and the worker died here
    assert abandoned_step_runs_recover() == 0  # a live attempt may still be running
    later = timezone.now() + executing_lease() + dt.timedelta(seconds=1)
    assert abandoned_step_runs_recover(now=later) == 1
    sr.refresh_from_db()
    assert (sr.status, sr.attempt, sr.retry_count, sr.error_message) == ("executing", 0, 1, WORKER_LOST)
    assert [row.args[2] for row in due_rows(EXECUTE)].count(1) == 1  # the first retry, through AUT-26
    assert abandoned_step_runs_recover(now=later) == 0  # a retry is scheduled: not abandoned any more
    fast_forward()
    drain_queue()
    assert [(s.step_index, s.status) for s in step_runs(run)] == [(0, "completed"), (1, "pending")]
    assert claimed.step_run.pk == sr.pk


def test_the_dispatcher_runs_it_as_a_sweep():
    assert run_sweeps()["automations.abandoned_step_runs"] == "abandoned step runs 0, lost retries 0"
