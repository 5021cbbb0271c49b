"""`/api/v1/health` over live HTTP (issue 13 item 8): the web process as `make run` starts it (gunicorn) and the
three supervised clusters plus the dispatcher, all on the test database. Healthy clusters are `ok`; a cluster
that stops consuming (its processes frozen with SIGSTOP, so its supervisor keeps beating) is reported `stalled`
and the answer `degraded` until the supervisor's watchdog restarts it, after which health is `ok` again; a
supervisor that stops beating is reported `down`."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import time
import urllib.request

import pytest

from owlat.jobs import enqueue, heartbeat_task
from testsupport.faults import FAULT_ENV
from testsupport.waiting import wait_until
from testsupport.web import serve_web
from testsupport.workers import descendants

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

DEGRADED_AFTER = 2.0  # HEALTH_QUEUE_AGE_DEGRADED_SECONDS of the web process


def health(url: str) -> dict:
    with urllib.request.urlopen(f"{url}/api/v1/health", timeout=10) as response:
        assert response.status == 200
        return json.load(response)


def statuses(body: dict) -> dict[str, str]:
    return {q["name"]: q["status"] for q in body["queues"]}


def test_health_over_http_tells_a_stalled_or_silent_cluster_from_a_healthy_one(supervised_workers):
    workers = supervised_workers
    web_env = {
        "HEALTH_QUEUE_AGE_DEGRADED_SECONDS": DEGRADED_AFTER,
        "CLUSTER_WATCHDOG_INTERVAL_SECONDS": FAULT_ENV["CLUSTER_WATCHDOG_INTERVAL_SECONDS"],
    }
    with serve_web(web_env) as (url, _):
        # healthy: every supervisor beats, nothing waits
        body = wait_until(
            lambda: (b := health(url))["status"] == "ok" and b,
            30,
            message=lambda: f"health never ok: {health(url)}",
        )
        assert statuses(body) == {"default": "ok", "transactional": "ok", "campaign": "ok", "inbox": "ok"}
        assert all(q["clusterHeartbeatAgeSeconds"] is not None for q in body["queues"])

        # stalled: the transactional cluster's processes are frozen, its supervisor still beats
        frozen = descendants(workers.procs["transactional"].pid)
        assert frozen
        for pid in frozen:
            os.kill(pid, signal.SIGSTOP)
        try:
            enqueue(heartbeat_task, "queue:transactional", queue="transactional")
            stalled_at = time.monotonic()
            body = wait_until(
                lambda: statuses(b := health(url))["transactional"] == "stalled" and b,
                30,
                message=lambda: f"a frozen cluster was never reported stalled: {health(url)}",
            )
            assert body["status"] == "degraded"
            q = {q["name"]: q for q in body["queues"]}["transactional"]
            assert q["queued"] >= 1 and q["oldestTaskAgeSeconds"] >= DEGRADED_AFTER  # rounded to 0.1 s
            assert q["clusterHeartbeatAgeSeconds"] < 1.5  # the supervisor lives: stalled, not down
            assert statuses(body)["default"] == "ok"
            print(f"stalled reported {time.monotonic() - stalled_at:.1f} s after the task was enqueued")
            # the watchdog restarts the frozen cluster (CLUSTER_STALL_SECONDS; SIGKILL reaches a stopped
            # process), the new one runs the task: ok again
            wait_until(
                lambda: health(url)["status"] == "ok",
                60,
                message=lambda: f"health not ok after the stall: {health(url)}\n{workers.logs_tail(10)}",
            )
            print(f"ok again {time.monotonic() - stalled_at:.1f} s after the task was enqueued")
            assert "cluster transactional: stalled" in workers.log("transactional")
        finally:
            for pid in frozen:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGCONT)

        # down: the campaign supervisor stops beating
        supervisor = workers.procs["campaign"].pid
        os.kill(supervisor, signal.SIGSTOP)
        try:
            body = wait_until(
                lambda: statuses(b := health(url))["campaign"] == "down" and b,
                30,
                message=lambda: f"a silent supervisor was never reported down: {health(url)}",
            )
            assert body["status"] == "degraded"
        finally:
            os.kill(supervisor, signal.SIGCONT)
        wait_until(lambda: health(url)["status"] == "ok", 30, message=lambda: f"not ok again: {health(url)}")
