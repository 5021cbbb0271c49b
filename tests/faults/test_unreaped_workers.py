"""A worker killed while its sentinel does not reap it (the flaky `test_worker_kills[fast]`, found under load).

django-q2's sentinel reaps and replaces dead workers from its guard loop, which takes each worker's timer lock
first; a worker SIGKILLed while it holds that lock (it does from the end of a task until its result is queued)
leaves the guard waiting for ever. From then on every killed worker stays a zombie. The watchdog took a
zombie for a live process (`kill(pid, 0)` succeeds on one), so a zombie whose last word was "busy" kept the
cluster "busy" for ever: never restarted, consuming nothing, its task never handed out again.

Here the guard is held still deterministically (the sentinel is stopped with SIGSTOP) while a busy and an idle
worker are SIGKILLed: the watchdog must see both as dead, hand the busy one's task out again and restart the
cluster, which then runs the waiting task."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from owlat.jobs import enqueue, heartbeat_task
from testsupport.waiting import wait_until
from testsupport.workers import spawn_manage, worker_environment

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


def state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return "gone"


def test_workers_dead_but_unreaped_do_not_keep_a_stalled_cluster_busy(tmp_path):
    from owlat.models import WorkerHeartbeat

    env = worker_environment(
        {
            "TMPDIR": str(tmp_path),
            "Q_TRANSACTIONAL_WORKERS": "2",
            "CLUSTER_WATCHDOG_INTERVAL_SECONDS": "0.5",
            "CLUSTER_STALL_SECONDS": "4",
        }
    )
    log_path = tmp_path / "supervisor.log"
    log = open(log_path, "wb")  # noqa: SIM115 - closed below
    proc = spawn_manage(["run_cluster", "transactional"], env, log)
    sentinel = 0

    def activity() -> dict[int, str]:
        files = [p for p in tmp_path.glob("owlat-cluster-transactional-*/*") if p.name.isdigit()]
        return {int(p.name): p.read_text() for p in files if state(int(p.name)) not in ("gone", "Z")}

    try:
        enqueue(heartbeat_task, "queue:ready", queue="transactional")
        wait_until(
            lambda: WorkerHeartbeat.objects.filter(name="queue:ready").exists(),
            90,
            message=lambda: "the cluster did not start\n" + log_path.read_text(),
        )
        enqueue("time.sleep", 30, queue="transactional")  # keeps one worker busy
        wait_until(
            lambda: len(activity()) == 2 and any(s.startswith("busy") for s in activity().values()), 30
        )
        workers = activity()
        parents = {int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1]) for pid in workers}
        assert len(parents) == 1
        sentinel = parents.pop()
        os.kill(sentinel, signal.SIGSTOP)  # its guard loop stops: nothing reaps or replaces a dead worker
        for pid in workers:
            os.kill(pid, signal.SIGKILL)
        wait_until(lambda: all(state(pid) == "Z" for pid in workers), 10)

        enqueue(heartbeat_task, "queue:probe", queue="transactional")
        started = time.monotonic()
        wait_until(
            lambda: WorkerHeartbeat.objects.filter(name="queue:probe").exists(),
            60,
            message=lambda: (
                "the stalled cluster with dead, unreaped workers was never restarted\n" + log_path.read_text()
            ),
        )
        print(f"the waiting task ran {time.monotonic() - started:.1f} s after the workers were killed")
        text = log_path.read_text()
        assert "1 task(s) of a dead worker made visible again" in text  # the busy worker's task
        assert "cluster transactional: stalled" in text or "was not reaped" in text
    finally:
        if sentinel:
            with contextlib.suppress(ProcessLookupError):
                os.kill(sentinel, signal.SIGCONT)
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        log.close()
