"""`make run`'s worker line (issue 8 item 6): the three django-q2 clusters under ONE `run_cluster` supervisor
process. Each queue's cluster takes work, each has its heartbeat, and a SIGTERM stops all of them within the 10 s
honcho and keepalive.sh allow, leaving no qcluster process behind."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from owlat import clusters
from owlat.jobs import QUEUES, enqueue, heartbeat_task
from testsupport.waiting import wait_until
from testsupport.workers import worker_environment

ROOT = Path(__file__).resolve().parents[1]


def _descendants(pid: int) -> set[int]:
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            children.setdefault(int(stat.rsplit(")", 1)[1].split()[1]), []).append(int(entry))
    found, todo = set(), [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.add(child)
            todo.append(child)
    return found


@pytest.mark.django_db(transaction=True)
def test_one_supervisor_runs_every_queue_and_stops_them_together():
    from owlat.models import WorkerHeartbeat

    assert Path(ROOT / "Procfile").read_text().count("run_cluster default transactional campaign inbox") == 1
    env = worker_environment({"Q_WORKERS": "1"})
    proc = subprocess.Popen(
        [sys.executable, str(ROOT / "manage.py"), "run_cluster", *QUEUES],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        names = {clusters.cluster_heartbeat_name(q) for q in QUEUES}
        wait_until(
            lambda: (
                set(WorkerHeartbeat.objects.filter(name__in=names).values_list("name", flat=True)) == names
            ),
            60,
            message="the supervisor did not beat for every queue",
        )
        assert set(WorkerHeartbeat.objects.filter(name__in=names).values_list("pid", flat=True)) == {proc.pid}
        for queue in QUEUES:
            enqueue(heartbeat_task, f"queue:{queue}", queue=queue)
        wait_until(
            lambda: (
                WorkerHeartbeat.objects.filter(name__in=[f"queue:{q}" for q in QUEUES]).count() == len(QUEUES)
            ),
            60,
            message="a queue's cluster did not run its task",
        )
        clusters_pids = _descendants(proc.pid)
        assert len(clusters_pids) >= len(QUEUES) * 2  # each qcluster and its sentinel at least
        started = time.monotonic()
        os.kill(proc.pid, signal.SIGTERM)
        proc.wait(timeout=10)
        assert time.monotonic() - started < 10
        # The supervisor SIGKILLs each cluster's process group before it exits; a killed process stays a zombie
        # until init reaps it, which takes longer on a loaded machine. Running is what counts.
        wait_until(
            lambda: not [pid for pid in clusters_pids if clusters.pid_alive(pid)],
            5,
            message="a cluster process kept running after the supervisor stopped",
        )
        left = {pid: clusters.process_state(pid) for pid in clusters_pids if clusters.pid_alive(pid)}
        assert not left, f"processes left after the supervisor stopped: {left}"
        assert not WorkerHeartbeat.objects.filter(name__in=names).exists()
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        for pid in _descendants(proc.pid):
            os.kill(pid, signal.SIGKILL)
