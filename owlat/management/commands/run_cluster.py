"""`manage.py run_cluster <queue>`: one django-q2 cluster under a small supervisor.

The supervisor starts `manage.py qcluster` for the queue in a session of its own, beats
`cluster:<queue>@<host>` every `CLUSTER_WATCHDOG_INTERVAL_SECONDS`, and restarts the cluster when it exits or
when it stops consuming (`owlat.clusters.Watch`). A SIGTERM or SIGINT stops the cluster cleanly (SIGTERM to
qcluster alone, SIGKILL to its process group after a grace period) and then the supervisor.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand
from django.db import close_old_connections, connection

from owlat import clusters
from owlat.jobs import QUEUES, heartbeat

logger = logging.getLogger(__name__)

STOP_GRACE_SECONDS = 4.0  # qcluster's own stop takes ~1 s; a stalled one never finishes
RESTART_BACKOFF_SECONDS = 2.0  # between two starts of a cluster that keeps dying


class Command(BaseCommand):
    help = "Run one django-q2 cluster (default, transactional, campaign or inbox) and restart it when it dies or stalls."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument(
            "queue",
            nargs="+",
            choices=QUEUES,
            help="The queue (django-q2 cluster) to run; several: one supervisor process for all (make run).",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        queues = list(dict.fromkeys(options["queue"]))
        if len(queues) == 1:
            Supervisor(queues[0], clusters.stamped(self.stdout.write)).run()
        else:
            say = clusters.stamped(self.stdout.write)
            run_together([Supervisor(queue, say) for queue in queues])


def run_together(supervisors: list[Supervisor]) -> None:
    """Several clusters under one supervisor process (a lighter `make run`): the same start, watchdog rounds
    and stop as `Supervisor.run`, for each cluster in turn."""

    def request_stop(*_: Any) -> None:
        for supervisor in supervisors:
            supervisor._stop = True

    signal.signal(signal.SIGTERM, request_stop)
    signal.signal(signal.SIGINT, request_stop)
    interval = min(s.interval for s in supervisors)
    try:
        for supervisor in supervisors:
            supervisor._announce()
            supervisor._start_child()
        while not supervisors[0]._stop:
            for supervisor in supervisors:
                supervisor._tick()
            deadline = time.monotonic() + interval
            while not supervisors[0]._stop and time.monotonic() < deadline:
                time.sleep(0.05)
    finally:
        # every cluster is told to stop at once, so stopping takes one grace period, not one per cluster (honcho
        # and keepalive.sh kill the supervisor 10 s after their SIGTERM)
        for supervisor in supervisors:
            supervisor._signal_child()
        for supervisor in supervisors:
            supervisor._finish()


class Supervisor:
    def __init__(self, queue: str, say: Any) -> None:
        self.queue = queue
        self.say = say
        self.name = clusters.cluster_heartbeat_name(queue)
        self.interval = float(settings.CLUSTER_WATCHDOG_INTERVAL_SECONDS)
        self.watch = clusters.Watch(stall_seconds=float(settings.CLUSTER_STALL_SECONDS))
        self.child: subprocess.Popen | None = None
        self.activity_dir = Path(tempfile.mkdtemp(prefix=f"owlat-cluster-{queue}-"))
        self.last_start = 0.0
        self.restarts = 0
        self._stop = False

    def run(self) -> None:
        signal.signal(signal.SIGTERM, self._request_stop)
        signal.signal(signal.SIGINT, self._request_stop)
        self._announce()
        try:
            self._start_child()
            while not self._stop:
                self._tick()
                deadline = time.monotonic() + self.interval
                while not self._stop and time.monotonic() < deadline:
                    time.sleep(0.05)
        finally:
            self._finish()

    def _announce(self) -> None:
        self.say(
            f"cluster {self.queue}: supervising (heartbeat {self.name}, stall after {self.watch.stall_seconds:g} s)"
        )

    def _finish(self) -> None:
        self._stop_child()
        with contextlib.suppress(Exception):
            from owlat.models import WorkerHeartbeat

            close_old_connections()
            WorkerHeartbeat.objects.filter(name=self.name, pid=os.getpid()).delete()
        shutil.rmtree(self.activity_dir, ignore_errors=True)

    def _request_stop(self, *_: Any) -> None:
        self._stop = True

    # -- one round ----------------------------------------------------------------------------------------
    def _tick(self) -> None:
        try:
            close_old_connections()
            heartbeat(self.name)
            assert self.child is not None
            code = self.child.poll()
            if code is not None:
                self.say(f"cluster {self.queue}: qcluster exited with code {code}; restarting")
                self._restart()
                return
            activity = clusters.read_activity(self.activity_dir)
            if activity.lost_tasks:
                # a worker died mid-task (OOM killer, kill -9): hand its task out again now, not after `retry`
                again = clusters.unlock_tasks(self.queue, activity.lost_tasks)
                self.say(f"cluster {self.queue}: {again} task(s) of a dead worker made visible again")
            age = clusters.oldest_task_age_seconds(self.queue)
            if self.watch.stalled(activity=activity, oldest_task_age=age):
                self.say(
                    f"cluster {self.queue}: stalled (oldest task {age:.0f} s old, no task started or finished "
                    f"for over {self.watch.stall_seconds:g} s, no worker busy); restarting"
                )
                self._restart()
            elif self.watch.guard_stuck(activity=activity):
                self.say(
                    f"cluster {self.queue}: a dead worker was not reaped for over "
                    f"{clusters.UNREAPED_AFTER_SECONDS:g} s (the sentinel no longer reaps or replaces workers), "
                    "no worker busy; restarting"
                )
                self._restart()
        except Exception:  # the database went away for a moment: keep supervising
            logger.exception("cluster %s: watchdog round failed", self.queue)
            with contextlib.suppress(Exception):
                connection.close()

    def _restart(self) -> None:
        self._stop_child()
        wait = self.last_start + RESTART_BACKOFF_SECONDS - time.monotonic()
        if wait > 0:
            time.sleep(wait)
        self.restarts += 1
        self._start_child()

    # -- the qcluster process -------------------------------------------------------------------------------
    def _start_child(self) -> None:
        # Tasks a dead cluster of this queue had pulled stay locked for django-q2's `retry` (minutes): when no
        # other cluster of the queue is alive, nobody is running them, so make them visible again now.
        with contextlib.suppress(Exception):
            close_old_connections()
            if not clusters.other_live_clusters(self.queue, self.name):
                unlocked = clusters.unlock_tasks(self.queue)
                if unlocked:
                    self.say(f"cluster {self.queue}: {unlocked} task(s) of a dead cluster made visible again")
        for path in self.activity_dir.iterdir():
            with contextlib.suppress(OSError):
                path.unlink()
        env = {
            **os.environ,
            clusters.ACTIVITY_DIR_ENV: str(self.activity_dir),
            clusters.SUPERVISOR_PID_ENV: str(os.getpid()),  # the cluster dies with this process
        }
        if self.queue == "default":
            env.pop("Q_CLUSTER_NAME", None)
        else:
            env["Q_CLUSTER_NAME"] = self.queue
        self.child = subprocess.Popen(
            [sys.executable, str(Path(settings.BASE_DIR) / "manage.py"), "qcluster"],
            env=env,
            stdin=subprocess.DEVNULL,
            start_new_session=True,  # a signal to the supervisor's group must not reach the workers
        )
        self.last_start = time.monotonic()
        self.watch.restarted()
        self.say(f"cluster {self.queue}: qcluster started (pid {self.child.pid})")

    def _signal_child(self) -> None:
        if self.child is not None and self.child.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.child.pid, signal.SIGTERM)

    def _stop_child(self) -> None:
        child = self.child
        if child is None:
            return
        if child.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(child.pid, signal.SIGTERM)
            with contextlib.suppress(subprocess.TimeoutExpired):
                child.wait(timeout=STOP_GRACE_SECONDS)
        # the sentinel and its workers outlive a killed qcluster: sweep the whole session's group
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(child.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            child.wait(timeout=5)
        self.child = None
