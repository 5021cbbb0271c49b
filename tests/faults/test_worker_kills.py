"""(b) SIGKILL of only the task-running children of each cluster (what the OOM killer does), five times. The
sentinel reincarnates them, but a worker killed while it held the task queue's lock leaves the cluster consuming
nothing (django-q2 issue 23); one killed while it held its timer lock leaves the sentinel's guard waiting for ever,
so nothing reaps or replaces the workers killed after it (tests/faults/test_unreaped_workers.py). The flow must
finish without a manual restart — the supervisor's watchdog restarts a stalled cluster or one whose sentinel
stopped reaping, and hands out again the tasks of killed workers — and /api/v1/health must report the stall
while it lasts."""

from __future__ import annotations

import random
import re

import pytest
from django.test import Client

from tests.faults.conftest import SIZES
from testsupport.faults import assert_clean, cluster_worker_pids, kill_pids

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

QUEUES = ("default", "transactional", "campaign")


@pytest.mark.parametrize("size", SIZES)
def test_killed_workers_stall_nothing_for_long_and_health_tells(
    size, make_flow, supervised_workers, proc_tmp
):
    workers = supervised_workers
    flow = make_flow(size)
    rng = random.Random(1302)
    client = Client()
    reported: dict[str, int] = dict.fromkeys(QUEUES, 0)  # health answers calling the queue stalled
    degraded = 0

    def watch_health() -> None:
        nonlocal degraded
        body = client.get("/api/v1/health").json()
        degraded += body["status"] == "degraded"
        for q in body["queues"]:
            if q["status"] == "stalled":
                reported[q["name"]] += 1

    flow.start_automation()
    killed = 0
    for _ in range(5):
        flow.pump(rng.uniform(1.0, 3.0), each=watch_health)
        for queue in QUEUES:
            killed += len(kill_pids(cluster_worker_pids(proc_tmp, queue)))
    flow.run_to_end(workers, timeout=size[2], each=watch_health)
    tally = flow.tally(f"worker-children SIGKILL x5, {size[0]} contacts + {size[1]} transactional")
    stalls = {q: len(re.findall(rf"cluster {q}: stalled", workers.log(q))) for q in QUEUES}
    # a killed worker that held its timer lock stops the sentinel's guard: restarted as soon as that is seen
    stuck = {
        q: len(re.findall(rf"cluster {q}: a dead worker was not reaped", workers.log(q))) for q in QUEUES
    }
    print(
        f"workers killed {killed}; stall restarts by the watchdog {stalls}; restarts for a stuck sentinel "
        f"{stuck}; health said stalled {reported}"
    )
    assert killed >= 5
    assert_clean(tally, interrupted_jobs=killed)
    assert flow.finished()
    assert sum(stalls.values()) + sum(stuck.values()) >= 1, (
        "no kill stalled a cluster: the scenario did not reproduce issue 23"
    )
    assert degraded >= 1
    for queue, n in stalls.items():
        if n:
            assert reported[queue] >= 1, f"{queue} stalled {n} time(s) but health never said so"
