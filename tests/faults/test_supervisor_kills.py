"""A SIGKILLed cluster supervisor (`manage.py run_cluster`, killed by the OOM killer or kill -9) takes its
django-q2 cluster with it: qcluster, the sentinel, the workers, pusher and monitor die within seconds (each is
bound to the process that started it, `owlat.clusters.bind_to_supervisor`), instead of running on unsupervised
beside the cluster that the supervisor's restart (keepalive.sh) starts."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest

from owlat import clusters
from owlat.jobs import enqueue, heartbeat_task
from testsupport.waiting import wait_until
from testsupport.workers import descendants, spawn_manage, worker_environment

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


def running(pid: int) -> bool:
    """Alive and not a zombie (a killed process whose parent died too waits to be reaped by init)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state not in ("Z", "X")


@pytest.mark.parametrize("queues", [["transactional"], ["default", "transactional", "campaign"]])
def test_a_killed_supervisor_leaves_no_cluster_process_running(queues, tmp_path):
    from owlat.models import WorkerHeartbeat

    env = worker_environment({"TMPDIR": str(tmp_path), "CLUSTER_WATCHDOG_INTERVAL_SECONDS": "0.5"})
    log = open(tmp_path / "supervisor.log", "wb")  # noqa: SIM115 - closed below
    proc = spawn_manage(["run_cluster", *queues], env, log)
    tree: list[int] = []
    try:
        for queue in queues:
            enqueue(heartbeat_task, f"queue:{queue}", queue=queue)
        wait_until(
            lambda: (
                WorkerHeartbeat.objects.filter(name__in=[f"queue:{q}" for q in queues]).count() == len(queues)
            ),
            90,
            message=lambda: "a cluster did not run its task\n" + (tmp_path / "supervisor.log").read_text(),
        )
        workers = [int(p.name) for p in tmp_path.glob("owlat-cluster-*/*") if p.name.isdigit()]
        tree = descendants(proc.pid)
        # each qcluster, its sentinel, monitor, pusher and at least one worker
        assert len(tree) >= 5 * len(queues), tree
        assert set(workers) <= set(tree)
        assert all(clusters.pid_alive(pid) for pid in tree)

        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=5)
        started = time.monotonic()
        wait_until(
            lambda: not [pid for pid in tree if running(pid)],
            10,
            message=lambda: (
                f"still running after the supervisor was killed: {[p for p in tree if running(p)]}"
            ),
        )
        print(
            f"{len(tree)} cluster processes gone {time.monotonic() - started:.2f} s after the supervisor's SIGKILL"
        )
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        for pid in tree:
            if running(pid):
                os.kill(pid, signal.SIGKILL)
        log.close()
