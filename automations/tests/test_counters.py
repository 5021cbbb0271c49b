"""Counters without hot rows (issue 12 item 2): deltas instead of in-place increments, a roll-up that applies each
delta once, readers that are exact before and after the roll-up, and no writer waiting on another's counter."""

from __future__ import annotations

import threading

import pytest
from django.db import connection, transaction

from automations.counters import counters_rollup
from automations.models import Automation, AutomationCounterDelta, AutomationStep
from automations.services.stats import automation_funnel
from automations.tests.conftest import DELAY_1H
from automations.triggers import automation_fanout
from owlat.registry import TriggerEvent
from testsupport import drain_queue

YES = {"kind": "contact_property", "field": "email", "operator": "not_empty"}


def fire(automation, contact) -> list[str]:
    return automation_fanout(
        TriggerEvent("contact_created", str(automation.organization_id), str(contact.pk))
    )


def stored_funnel(automation):
    return [
        (s.stat_pending, s.stat_executing, s.stat_completed, s.stat_failed, s.stat_skipped)
        for s in AutomationStep.objects.filter(automation=automation).order_by("step_index")
    ]


def shown_funnel(automation):
    return [
        (f["pending"], f["executing"], f["completed"], f["failed"], f["skipped"])
        for f in automation_funnel(automation)
    ]


def test_writers_record_deltas_and_the_funnel_is_exact_before_and_after_the_roll_up(
    make_automation, make_contact
):
    branch = ("condition", {"condition": YES, "yesBranchStepIndex": 2, "noBranchStepIndex": 2})
    automation = make_automation([branch, DELAY_1H, DELAY_1H], status="active")
    for _ in range(4):
        fire(automation, make_contact())
    drain_queue()
    # nothing was written in place: the stored counters are untouched, the deltas are pending
    assert stored_funnel(automation) == [(0, 0, 0, 0, 0)] * 3
    assert Automation.objects.get(pk=automation.pk).stats_entered == 0
    assert AutomationCounterDelta.objects.exists()
    # the admin/API funnel adds the pending deltas: exact now …
    expected = [(0, 0, 4, 0, 0), (0, 0, 0, 0, 4), (4, 0, 0, 0, 0)]
    assert shown_funnel(automation) == expected
    # … and after the roll-up, which folds every delta exactly once
    applied = counters_rollup()
    assert applied > 0 and not AutomationCounterDelta.objects.exists()
    assert stored_funnel(automation) == expected == shown_funnel(automation)
    assert counters_rollup() == 0
    automation.refresh_from_db()
    assert (automation.stats_entered, automation.stats_active) == (4, 4)


@pytest.mark.skipif(
    connection.vendor != "postgresql",
    reason="row locks and lock_timeout are PostgreSQL's (SQLite serializes writers)",
)
@pytest.mark.django_db(transaction=True)
def test_opening_runs_does_not_wait_on_another_transactions_counter(make_automation, make_contact):
    # Given a request that opened a run (stats_entered +1) and has not committed yet
    automation = make_automation([DELAY_1H], status="active")
    first, second = make_contact(), make_contact()
    opened = threading.Event()
    release = threading.Event()
    errors: list[BaseException] = []

    def slow_request() -> None:
        try:
            with transaction.atomic():
                assert len(fire(automation, first)) == 1
                opened.set()
                release.wait(10)
        except BaseException as exc:
            errors.append(exc)
        finally:
            connection.close()

    t = threading.Thread(target=slow_request)
    t.start()
    try:
        assert opened.wait(10)
        # when a second request opens a run of the same automation, it must not wait for the first one's lock
        with transaction.atomic():
            with connection.cursor() as cursor:
                cursor.execute("SET LOCAL lock_timeout = '500ms'")
            assert len(fire(automation, second)) == 1
    finally:
        release.set()
        t.join()
    assert errors == []
    counters_rollup()
    assert Automation.objects.get(pk=automation.pk).stats_entered == 2


@pytest.mark.django_db(transaction=True)
def test_concurrent_roll_ups_apply_each_delta_once(make_automation, make_contact):
    automation = make_automation([DELAY_1H], status="active")
    for _ in range(30):
        fire(automation, make_contact())
    drain_queue()
    errors: list[BaseException] = []
    barrier = threading.Barrier(3)

    def roll(wait: bool) -> None:
        try:
            barrier.wait()
            counters_rollup(wait=wait)
        except BaseException as exc:
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=roll, args=(w,)) for w in (True, True, False)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    counters_rollup()
    automation.refresh_from_db()
    assert automation.stats_entered == 30
    assert stored_funnel(automation) == [(30, 0, 0, 0, 0)]


def test_the_stats_api_and_the_breaker_reset_stay_right(make_automation, make_contact):
    automation = make_automation([("condition", {"condition": YES})], status="active")
    Automation.objects.filter(pk=automation.pk).update(consecutive_run_failures=3)
    fire(automation, make_contact())
    drain_queue()
    automation.refresh_from_db()
    assert automation.consecutive_run_failures == 0  # a completed run resets the breaker at once (AUT-27)
    from automations.api.serializers import AutomationStatsSerializer

    assert AutomationStatsSerializer(automation).data == {
        "entered": 1,
        "active": 0,
        "completed": 1,
        "cancelled": 0,
    }
    assert automation.stats_entered == 0  # the caller's object is not changed by the overlay
