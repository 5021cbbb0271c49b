"""D-05 background work: the enqueue helper, due-task rows and the `run_due_tasks` dispatcher."""

import datetime as dt
import subprocess
import time
from collections import Counter

import pytest
from django.conf import settings as django_settings
from django.db import transaction
from django.utils import timezone
from django_q.models import OrmQ

from owlat import jobs
from owlat.jobs import (
    claim_due_tasks,
    dispatch_due_tasks,
    enqueue,
    hand_over_due_task,
    heartbeat,
    newest_heartbeat_age_seconds,
    next_due_in,
)
from owlat.models import AuditLog, DueTask, Organization, WorkerHeartbeat
from testsupport import queued_tasks, wait_until, worker_environment
from testsupport.race import race
from testsupport.workers import spawn_manage

MARKER = "owlat.tests.test_jobs.marker_task"


def marker_task(organization_id: str, tag: str) -> str:
    """Run by real workers in the tests below: leaves one audit row per execution."""
    from owlat.audit import audit_write

    audit_write(
        organization_id=organization_id,
        actor="system:test",
        action="test.marker",
        resource="job",
        resource_id=tag,
    )
    return tag


def _markers_queued():
    return [t for t in queued_tasks() if t.func == MARKER]


# --- enqueue ----------------------------------------------------------------------------------------------


@pytest.mark.django_db
def test_immediate_enqueue_goes_to_the_named_queue():
    enqueue(MARKER, "org", "a")
    enqueue(marker_task, "org", "b", queue="campaign")
    enqueue(MARKER, "org", "c", queue="transactional", kwargs={})
    tasks = _markers_queued()
    assert [(t.queue, t.args) for t in tasks] == [
        ("default", ("org", "a")),
        ("campaign", ("org", "b")),
        ("transactional", ("org", "c")),
    ]
    assert DueTask.objects.count() == 0


@pytest.mark.django_db
def test_unknown_queue_is_refused():
    with pytest.raises(ValueError):
        enqueue(MARKER, "org", "a", queue="bulk")


@pytest.mark.django_db
def test_task_enqueued_in_a_rolled_back_transaction_never_exists():
    with pytest.raises(RuntimeError), transaction.atomic():
        enqueue(MARKER, "org", "now")
        enqueue(MARKER, "org", "later", at=timezone.now() + dt.timedelta(minutes=5))
        assert len(_markers_queued()) == 1
        assert DueTask.objects.count() == 1
        raise RuntimeError("rolled back")
    assert _markers_queued() == []
    assert OrmQ.objects.count() == 0
    assert DueTask.objects.count() == 0


@pytest.mark.django_db
def test_a_past_or_present_at_is_immediate():
    enqueue(MARKER, "org", "past", at=timezone.now() - dt.timedelta(seconds=5))
    assert [t.args for t in _markers_queued()] == [("org", "past")]
    assert DueTask.objects.count() == 0


@pytest.mark.django_db
def test_future_task_is_a_due_task_handed_over_only_when_due():
    now = timezone.now()
    due = now + dt.timedelta(seconds=30)
    enqueue(MARKER, "org", "x", at=due, queue="transactional")
    row = DueTask.objects.get()
    assert (row.func, row.args, row.queue, row.due_at) == (MARKER, ["org", "x"], "transactional", due)
    assert _markers_queued() == []
    assert 29 <= next_due_in(now=now) <= 30

    assert dispatch_due_tasks(now=due - dt.timedelta(milliseconds=1)) == 0
    assert _markers_queued() == []

    assert dispatch_due_tasks(now=due) == 1
    assert [(t.queue, t.args) for t in _markers_queued()] == [("transactional", ("org", "x"))]
    assert DueTask.objects.count() == 0
    assert next_due_in(now=due) is None
    # nothing is handed over twice
    assert dispatch_due_tasks(now=due + dt.timedelta(hours=1)) == 0
    assert len(_markers_queued()) == 1


@pytest.mark.django_db
def test_dispatcher_killed_while_holding_a_lease_loses_nothing(monkeypatch):
    now = timezone.now()
    for i in range(3):
        enqueue(MARKER, "org", f"t{i}", at=now + dt.timedelta(seconds=1))
    due = now + dt.timedelta(seconds=1)

    # Given a dispatcher that leases the due rows and dies before handing any over
    class Killed(BaseException):
        pass

    def die(*args, **kwargs):
        raise Killed

    with monkeypatch.context() as m:
        m.setattr(jobs, "_push", die)
        with pytest.raises(Killed):
            dispatch_due_tasks(now=due)
    lease_until = due + dt.timedelta(seconds=django_settings.DUE_TASK_LEASE_SECONDS)
    assert list(DueTask.objects.values_list("lease_until", flat=True)) == [lease_until] * 3
    assert _markers_queued() == []

    # When another dispatcher runs while the lease holds, it leaves the rows alone
    assert dispatch_due_tasks(now=due + dt.timedelta(seconds=1)) == 0
    assert next_due_in(now=due + dt.timedelta(seconds=1)) is None
    assert _markers_queued() == []

    # Then once the lease has run out, it hands every row over, once
    assert dispatch_due_tasks(now=lease_until + dt.timedelta(milliseconds=1)) == 3
    assert sorted(t.args[1] for t in _markers_queued()) == ["t0", "t1", "t2"]
    assert DueTask.objects.count() == 0


@pytest.mark.django_db
def test_a_dispatcher_whose_lease_ran_out_does_not_hand_over_a_row_taken_by_another():
    now = timezone.now()
    due = now + dt.timedelta(seconds=1)
    enqueue(MARKER, "org", "slow", at=due)
    enqueue(MARKER, "org", "other", at=due)
    lease = dt.timedelta(seconds=django_settings.DUE_TASK_LEASE_SECONDS)

    # Given dispatcher A claimed both rows and then stalled past its lease
    rows_a, lease_a = claim_due_tasks(now=due)
    assert len(rows_a) == 2
    # When dispatcher B claims them after the lease ran out and hands over one before A wakes up
    rows_b, lease_b = claim_due_tasks(now=lease_a + dt.timedelta(seconds=1))
    assert {r.id for r in rows_b} == {r.id for r in rows_a}
    assert lease_b == lease_a + dt.timedelta(seconds=1) + lease
    assert hand_over_due_task(rows_b[0], lease_until=lease_b) is True

    # Then A hands over neither row (one is gone, the other is B's now)
    assert [hand_over_due_task(r, lease_until=lease_a) for r in rows_a] == [False, False]
    assert hand_over_due_task(rows_b[1], lease_until=lease_b) is True
    assert sorted(t.args[1] for t in _markers_queued()) == ["other", "slow"]
    assert DueTask.objects.count() == 0


@pytest.mark.django_db(transaction=True)
def test_concurrent_dispatch_threads_hand_each_row_over_exactly_once():
    now = timezone.now()
    due = now + dt.timedelta(seconds=1)
    for i in range(120):
        DueTask.objects.create(func=MARKER, args=["org", f"r{i}"], kwargs={}, due_at=due)
    counts: list[int] = []

    def dispatcher(_: int) -> None:
        while DueTask.objects.exists():
            counts.append(dispatch_due_tasks(now=due, batch=7))

    race(dispatcher, threads=4)  # an error in a thread fails the test here
    assert sum(counts) == 120
    tags = Counter(t.args[1] for t in _markers_queued())
    assert set(tags) == {f"r{i}" for i in range(120)}
    assert set(tags.values()) == {1}


def _spawn(args, env, log):
    return spawn_manage(args, env, log)


def _stop(proc):
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=5)


@pytest.mark.django_db(transaction=True)
def test_two_run_due_tasks_processes_hand_each_due_row_over_once_and_on_time(tmp_path):
    org = Organization.objects.create(name="Jobs")
    env = worker_environment({"DUE_TASK_POLL_SECONDS": "0.25"})
    log = open(tmp_path / "procs.log", "ab")  # noqa: SIM115
    dispatchers = [_spawn(["run_due_tasks", "--name", f"d{i}"], env, log) for i in range(2)]
    cluster = None
    try:
        # Given two dispatcher processes that are up (each beats at start)
        wait_until(
            lambda: WorkerHeartbeat.objects.filter(name__in=["d0", "d1"]).count() == 2,
            30,
            message=lambda: (tmp_path / "procs.log").read_text(),
        )
        # When tasks come due about a second from now
        start = timezone.now()
        due_times = {}
        for i in range(40):
            due = start + dt.timedelta(seconds=1.0 + (i % 4) * 0.25)
            due_times[f"m{i}"] = due
            enqueue(MARKER, str(org.pk), f"m{i}", at=due)
        assert DueTask.objects.count() == 40

        # Then each is handed to django-q2 exactly once, within a second of its due time
        wait_until(
            lambda: DueTask.objects.count() == 0, 15, message=lambda: (tmp_path / "procs.log").read_text()
        )
        rows = [(OrmQ.objects.get(id=t.id).lock, t.args[1]) for t in _markers_queued()]
        assert Counter(tag for _, tag in rows) == Counter(dict.fromkeys(due_times, 1))
        for handed_at, tag in rows:
            lag = (handed_at - due_times[tag]).total_seconds()
            assert 0 <= lag < 1.0, (tag, lag)

        # and a real worker runs each of them exactly once
        cluster = _spawn(["qcluster"], env, log)
        wait_until(
            lambda: AuditLog.objects.filter(action="test.marker").count() >= 40,
            30,
            message=lambda: (tmp_path / "procs.log").read_text(),
        )
        time.sleep(0.5)  # a duplicate would show up now
        ran = Counter(AuditLog.objects.filter(action="test.marker").values_list("resource_id", flat=True))
        assert ran == Counter(dict.fromkeys(due_times, 1))
    finally:
        for proc in [*dispatchers, *([cluster] if cluster else [])]:
            _stop(proc)
        log.close()


@pytest.mark.django_db
def test_heartbeat_rows():
    assert newest_heartbeat_age_seconds() is None
    heartbeat("dispatcher")
    heartbeat("dispatcher")
    row = WorkerHeartbeat.objects.get()
    assert row.name == "dispatcher" and row.pid
    assert newest_heartbeat_age_seconds() < 5
    assert jobs.heartbeat_task("queue:default") == "heartbeat queue:default"
    assert WorkerHeartbeat.objects.filter(name="queue:default").exists()
