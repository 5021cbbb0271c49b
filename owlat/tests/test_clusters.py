"""Cluster liveness and progress (issue 13 item 8): the watchdog's stall rule, the worker activity files, the
per-queue health report, the dispatcher's sweeps and the renewed send claims. The same machinery against real
processes is in tests/faults/."""

from __future__ import annotations

import datetime as dt
import os
import time

import pytest
from django.test import Client
from django.utils import timezone

from owlat import clusters
from owlat.jobs import enqueue, heartbeat, run_sweeps

pytestmark = pytest.mark.django_db


def test_watch_restarts_only_an_idle_cluster_that_made_no_progress():
    watch = clusters.Watch(stall_seconds=10)
    idle = clusters.Activity(workers=[1], busy=[], progress_at=None, lost_tasks=[])
    starting = clusters.Activity(workers=[], busy=[], progress_at=None, lost_tasks=[])
    assert not watch.stalled(activity=starting, oldest_task_age=300, now=1000)  # no worker up yet
    assert not watch.stalled(activity=idle, oldest_task_age=300, now=1001)  # first worker seen: ready
    assert not watch.stalled(activity=idle, oldest_task_age=None, now=1100)  # nothing waits
    assert not watch.stalled(activity=idle, oldest_task_age=5, now=1100)  # nothing waits long
    assert watch.stalled(activity=idle, oldest_task_age=30, now=1100)
    busy = clusters.Activity(workers=[1], busy=[1], progress_at=1005.0, lost_tasks=[])
    assert not watch.stalled(activity=busy, oldest_task_age=30, now=1100)  # a long task runs
    recent = clusters.Activity(workers=[1], busy=[], progress_at=1095.0, lost_tasks=[])
    assert not watch.stalled(activity=recent, oldest_task_age=30, now=1100)
    watch.restarted()
    assert not watch.stalled(activity=idle, oldest_task_age=300, now=1200)  # a new cluster gets its time


def test_activity_files_tell_workers_busy_ones_and_tasks_lost_with_a_dead_worker(tmp_path, monkeypatch):
    monkeypatch.setenv(clusters.ACTIVITY_DIR_ENV, str(tmp_path))
    clusters.on_worker_spawned()
    me = os.getpid()
    assert clusters.read_activity(tmp_path) == clusters.Activity([me], [], None, [])
    clusters.on_task_started(task={"ack_id": 42})
    activity = clusters.read_activity(tmp_path)
    assert activity.busy == [me] and activity.progress_at is not None
    clusters.on_task_finished()
    assert clusters.read_activity(tmp_path).busy == []
    dead = 2**22 + 12345  # above pid_max on this kind of machine: never a live process
    (tmp_path / str(dead)).write_text("busy 7")
    activity = clusters.read_activity(tmp_path)
    assert activity.lost_tasks == ["7"] and activity.workers == [me]
    assert not (tmp_path / str(dead)).exists()
    # a task failing because the database went away is not acknowledged but handed out again
    failed = {"id": "t1", "ack_id": 9, "success": False, "result": "x : Traceback … OperationalError: gone"}
    clusters.on_task_finished(task=failed)
    assert "ack_id" not in failed
    assert clusters.read_activity(tmp_path).lost_tasks == ["9"]
    other = {"id": "t2", "ack_id": 10, "success": False, "result": "ValueError: bad input"}
    clusters.on_task_finished(task=other)
    assert other["ack_id"] == 10 and clusters.read_activity(tmp_path).lost_tasks == []


def test_a_dead_worker_its_sentinel_has_not_reaped_is_dead_not_busy(tmp_path):
    """A zombie (dead, not reaped: django-q2's guard loop can wait for ever on a killed worker's timer lock) is
    not a live worker: its task is handed out again once, and the watchdog learns the sentinel stopped reaping."""
    pid = os.fork()
    if pid == 0:
        os._exit(0)
    try:
        wait_until_zombie = time.monotonic() + 10
        while clusters.process_state(pid) != "Z" and time.monotonic() < wait_until_zombie:
            time.sleep(0.01)
        assert clusters.process_state(pid) == "Z"
        assert not clusters.pid_alive(pid)
        assert clusters.pid_alive(os.getpid())
        (tmp_path / str(pid)).write_text("busy 17")
        first = clusters.read_activity(tmp_path, now=1000.0)
        assert first.workers == [] and first.busy == [] and first.lost_tasks == ["17"]
        assert first.unreaped_since == 1000.0
        again = clusters.read_activity(tmp_path, now=1003.0)
        assert again.lost_tasks == [] and again.unreaped_since is not None  # reported once, still unreaped
        watch = clusters.Watch(stall_seconds=60)
        assert not watch.guard_stuck(activity=first, now=1000.0 + clusters.UNREAPED_AFTER_SECONDS - 1)
        assert watch.guard_stuck(activity=first, now=1000.0 + clusters.UNREAPED_AFTER_SECONDS + 1)
        busy = clusters.Activity([1], [1], None, [], unreaped_since=1000.0)
        assert not watch.guard_stuck(activity=busy, now=2000.0)  # a live worker's task finishes first
    finally:
        os.waitpid(pid, 0)
    assert clusters.process_state(pid) is None
    gone = clusters.read_activity(tmp_path)
    assert gone.unreaped_since is None and not (tmp_path / str(pid)).exists()


def test_health_reports_each_queue_and_degrades_on_an_old_task_or_a_silent_cluster(settings):
    from django_q.models import OrmQ

    client = Client()
    body = client.get("/api/v1/health").json()
    assert body["status"] == "ok"
    assert [q["name"] for q in body["queues"]] == ["default", "transactional", "campaign", "inbox"]
    assert body["queueAgeDegradedSeconds"] == settings.HEALTH_QUEUE_AGE_DEGRADED_SECONDS
    heartbeat(clusters.cluster_heartbeat_name("transactional"))
    enqueue("owlat.jobs.heartbeat_task", "x", queue="transactional")
    q = {q["name"]: q for q in client.get("/api/v1/health").json()["queues"]}["transactional"]
    assert q["status"] == "ok" and q["queued"] == 1 and q["oldestTaskAgeSeconds"] < 5
    assert q["clusterHeartbeatAgeSeconds"] < 5
    settings.HEALTH_QUEUE_AGE_DEGRADED_SECONDS = 0.0
    body = client.get("/api/v1/health").json()
    assert body["status"] == "degraded"
    assert {q["name"]: q["status"] for q in body["queues"]}["transactional"] == "stalled"
    settings.HEALTH_QUEUE_AGE_DEGRADED_SECONDS = 60.0
    OrmQ.objects.all().delete()
    from owlat.models import WorkerHeartbeat

    WorkerHeartbeat.objects.filter(name__startswith="cluster:").update(
        beat_at=timezone.now() - dt.timedelta(hours=1)
    )
    body = client.get("/api/v1/health").json()
    assert body["status"] == "degraded"
    assert {q["name"]: q["status"] for q in body["queues"]}["transactional"] == "down"


def test_unlock_hands_out_again_only_the_tasks_asked_for():
    from django_q.models import OrmQ

    enqueue("owlat.jobs.heartbeat_task", "a", queue="campaign")
    enqueue("owlat.jobs.heartbeat_task", "b", queue="campaign")
    later = timezone.now() + dt.timedelta(minutes=3)
    OrmQ.objects.update(lock=later)
    first, second = OrmQ.objects.order_by("id")
    assert clusters.unlock_tasks("campaign", [str(first.pk)]) == 1
    assert OrmQ.objects.filter(lock__gt=timezone.now()).get().pk == second.pk
    assert clusters.unlock_tasks("campaign") == 1
    assert not OrmQ.objects.filter(lock__gt=timezone.now()).exists()


def test_the_dispatcher_sweep_redrives_rows_of_a_dead_claim_within_the_lease(settings):
    """A claim not renewed for SEND_CLAIM_LEASE_SECONDS is a dead job's: its rows go back to the pool."""
    from delivery.lifecycle import claim_orphans, claim_sends, renew_claims
    from delivery.models import TransactionalSend
    from owlat.organizations import organization_create

    org = organization_create(name="Acme", default_from_email="a@acme.test")
    row = TransactionalSend.objects.create(organization=org, kind="transactional", email="x@example.com")
    token, won = claim_sends("transactional", [row.pk])
    assert won == [str(row.pk)]
    assert claim_orphans("transactional") == []
    past = timezone.now() - dt.timedelta(seconds=settings.SEND_CLAIM_LEASE_SECONDS + 1)
    TransactionalSend.objects.filter(pk=row.pk).update(claimed_at=past)
    assert renew_claims("transactional", token) == 1  # the live job renews: not an orphan
    assert claim_orphans("transactional") == []
    TransactionalSend.objects.filter(pk=row.pk).update(claimed_at=past)  # the job died: nobody renews
    assert claim_orphans("transactional") == [str(row.pk)]
    from testsupport import queued_tasks

    before = len(queued_tasks("transactional"))
    assert "orphans 1" in run_sweeps()["delivery.reap_stuck_sends"]
    assert len(queued_tasks("transactional")) == before + 1
    # never claimed: handed out again after SEND_ORPHAN_AFTER_SECONDS
    fresh = TransactionalSend.objects.create(organization=org, kind="transactional", email="y@example.com")
    assert str(fresh.pk) not in claim_orphans("transactional")
    TransactionalSend.objects.filter(pk=fresh.pk).update(
        queued_at=timezone.now() - dt.timedelta(seconds=settings.SEND_ORPHAN_AFTER_SECONDS + 1)
    )
    assert str(fresh.pk) in claim_orphans("transactional")
