"""Coalesced wake-ups (`owlat.wakeups`, issue 12 item 2): one pending task per wake task, none lost."""

import datetime as dt
import threading
import time

import pytest
from django.db import connection, transaction
from django.test import override_settings
from django.utils import timezone

from owlat.models import Organization, WakeUp
from owlat.tests.test_jobs import MARKER
from owlat.wakeups import WAKE_STALE_AFTER, wake, wake_cte, wake_taken, wakeups_stale
from testsupport import queued_tasks

TASK = "owlat.tests.test_wakeups.wake_target"


def wake_target() -> str:
    return "woken"


def _queued(func: str = TASK, queue: str | None = None):
    return [t for t in queued_tasks(queue=queue) if t.func == func]


@pytest.mark.django_db
def test_a_pending_wake_up_absorbs_the_next_ones_until_the_task_takes_it():
    # Given a first wake-up, which enqueues the task and marks it pending
    assert wake(TASK) is True
    # when more wake-ups come while it is pending, nothing more is queued
    assert [wake(TASK) for _ in range(5)] == [False] * 5
    assert len(_queued()) == 1
    assert list(WakeUp.objects.values_list("func", "queue")) == [(TASK, None)]
    # when the task starts and takes its wake-up, the marker is gone
    assert wake_taken(TASK) is True
    assert not WakeUp.objects.exists()
    assert wake_taken(TASK) is False
    # and the next wake-up enqueues again
    assert wake(TASK) is True
    assert len(_queued()) == 2


@pytest.mark.django_db
def test_wake_ups_are_per_task_and_go_to_their_queue():
    assert wake(TASK, queue="transactional") is True
    assert wake(MARKER) is True
    assert [t.func for t in queued_tasks(queue="transactional")] == [TASK]
    assert [t.func for t in queued_tasks(queue="default")] == [MARKER]
    with pytest.raises(ValueError, match="unknown queue"):
        wake(TASK, queue="nope")


@pytest.mark.django_db
def test_in_a_callers_statement_the_wake_up_follows_its_condition():
    # Given the parts a caller puts into its own statement, with a condition over its CTEs
    def run(flag: bool) -> None:
        sql, params = wake_cte(TASK, when="EXISTS (SELECT 1 FROM mine WHERE x)")
        with connection.cursor() as cursor:
            cursor.execute(f"WITH mine AS (SELECT %s::boolean AS x), {sql} SELECT 1", [flag, *params])

    # a statement whose condition is false wakes nothing, one whose condition holds wakes the task once
    run(False)
    assert _queued() == [] and not WakeUp.objects.exists()
    run(True)
    run(True)
    assert len(_queued()) == 1


@pytest.mark.django_db
def test_a_rolled_back_wake_up_leaves_nothing_pending():
    with pytest.raises(RuntimeError), transaction.atomic():
        wake(TASK)
        raise RuntimeError("the caller's transaction fails")
    assert _queued() == [] and not WakeUp.objects.exists()
    assert wake(TASK) is True


@pytest.mark.django_db(transaction=True)
def test_the_task_waits_for_a_writer_that_relied_on_the_pending_wake_up():
    """No lost wake-up: a writer finds the task pending and enqueues nothing; the task starts before the writer
    commits. Taking the wake-up waits for the writer's commit, so what the task reads next includes its work."""
    assert wake(TASK) is True
    relied = threading.Event()
    release = threading.Event()
    committed_at: list[float] = []

    def writer() -> None:
        try:
            with transaction.atomic():
                Organization.objects.create(name="Written by the writer")
                assert wake(TASK) is False  # pending: the writer enqueues nothing
                relied.set()
                release.wait(10)
                time.sleep(0.3)
                committed_at.append(time.monotonic())
        finally:
            connection.close()

    thread = threading.Thread(target=writer)
    thread.start()
    assert relied.wait(10)
    release.set()
    # when the task starts (and takes its wake-up) while the writer is still open
    assert wake_taken(TASK) is True
    taken_at = time.monotonic()
    # then it waited for the writer's commit, and sees the writer's work
    thread.join(10)
    assert committed_at and taken_at >= committed_at[0]
    assert Organization.objects.filter(name="Written by the writer").count() == 1
    # and a writer after the take enqueues the task again
    assert wake(TASK) is True
    assert len(_queued()) == 2


@pytest.mark.django_db(transaction=True)
def test_writers_do_not_wait_for_each_other():
    assert wake(TASK) is True
    inside = threading.Event()
    done = threading.Event()

    def first() -> None:
        try:
            with transaction.atomic():
                wake(TASK)
                inside.set()
                done.wait(10)
        finally:
            connection.close()

    thread = threading.Thread(target=first)
    thread.start()
    assert inside.wait(10)
    # a second writer's wake-up returns at once while the first still holds its transaction open
    started = time.monotonic()
    with transaction.atomic():
        assert wake(TASK) is False
    assert time.monotonic() - started < 2
    done.set()
    thread.join(10)


@pytest.mark.django_db
def test_a_stale_wake_up_is_re_enqueued_by_the_sweep():
    # Given a marker whose task was lost (a Redis push that never happened after commit)
    WakeUp.objects.create(func=TASK, queue="transactional", created_at=timezone.now() - WAKE_STALE_AFTER * 2)
    WakeUp.objects.create(func=MARKER, queue=None, created_at=timezone.now())
    # when the dispatcher's sweep runs, the stale marker is gone and its task is queued; the fresh one stays
    assert wakeups_stale() == "re-enqueued 1 stale wake-ups"
    assert [t.func for t in queued_tasks(queue="transactional")] == [TASK]
    assert list(WakeUp.objects.values_list("func", flat=True)) == [MARKER]
    # and wake-ups of that task work again
    assert wake(TASK) is True


def test_the_sweep_is_registered_with_the_dispatcher():
    from owlat.registry import sweeps

    assert sweeps()["owlat.wakeups_stale"] is wakeups_stale


@pytest.mark.django_db
@override_settings(OWLAT_TEST_DELIVER_TWICE=True)
def test_with_the_duplicate_delivery_switch_a_wake_up_is_delivered_twice():
    assert wake(TASK) is True
    assert wake(TASK) is False
    assert len(_queued()) == 2  # the one wake-up, handed over twice
    assert WakeUp.objects.get().created_at > timezone.now() - dt.timedelta(minutes=1)


@pytest.mark.django_db
@override_settings(Q_BROKER_IS_TRANSACTIONAL=False)
def test_with_redis_the_marked_wake_up_is_pushed_after_commit(django_capture_on_commit_callbacks):
    # Given a broker outside the database (Redis): the task is pushed after commit, once per pending marker
    with django_capture_on_commit_callbacks() as callbacks:
        assert wake(TASK) is True
        assert wake(TASK) is False
    assert len(callbacks) == 1
    assert list(WakeUp.objects.values_list("func", flat=True)) == [TASK]


@pytest.mark.django_db
def test_django_q_sync_mode_runs_every_wake_up(settings):
    from django_q.conf import Conf

    settings.Q_CLUSTER = {**settings.Q_CLUSTER, "sync": True}
    old, Conf.SYNC = Conf.SYNC, True
    try:
        assert wake(TASK) is True
        assert wake(TASK) is True
    finally:
        Conf.SYNC = old
    assert not WakeUp.objects.exists()
