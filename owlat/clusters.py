"""Liveness and progress of the django-q2 clusters (issue 13 item 8), around the cluster, not in it.

A killed worker can stall its whole cluster silently (django-q2 issue 23: a worker that dies while holding the
task queue's lock leaves every other worker, and the one the sentinel reincarnates, waiting on that lock for
ever). So each cluster runs under `manage.py run_cluster <queue>`, a small supervisor that
- beats `cluster:<queue>@<host>` every `CLUSTER_WATCHDOG_INTERVAL_SECONDS` (liveness of the cluster);
- learns what its workers do from files they write in a directory of its own (`OWLAT_CLUSTER_ACTIVITY_DIR`,
  written by django-q2 signal receivers: spawned, task started, task finished);
- restarts the cluster when it died, or when it stopped consuming: its queue's oldest task is older than
  `CLUSTER_STALL_SECONDS`, no worker started or finished a task for that long, and none is busy now.

`queue_states()` is what `/api/v1/health` reports per queue.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import os
import socket
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from django.conf import settings
from django.utils import timezone

ACTIVITY_DIR_ENV = "OWLAT_CLUSTER_ACTIVITY_DIR"
IDLE, BUSY, DONE = "idle", "busy", "done"


def cluster_heartbeat_name(queue: str, host: str | None = None) -> str:
    """One supervisor per queue and host: `cluster:<queue>@<host>`."""
    return f"cluster:{queue}@{(host or socket.gethostname())[:80]}"


def heartbeat_stale_after() -> float:
    return 3 * float(settings.CLUSTER_WATCHDOG_INTERVAL_SECONDS)


# --- worker activity files (written in the worker processes) --------------------------------------------------


def _write_activity(state: str) -> None:
    directory = os.environ.get(ACTIVITY_DIR_ENV)
    if not directory:
        return
    with contextlib.suppress(OSError):
        Path(directory, str(os.getpid())).write_text(state)


def on_worker_spawned(**_: Any) -> None:
    _write_activity(IDLE)


def on_task_started(task: dict | None = None, **_: Any) -> None:
    # the broker row of the task: if this worker dies mid-task, the supervisor makes it visible again at once
    _write_activity(f"{BUSY} {(task or {}).get('ack_id', '')}")


def on_task_finished(task: dict | None = None, **_: Any) -> None:
    _write_activity(DONE)
    if task is not None and not task.get("success", True) and _transient_database_error(task):
        _redeliver(task)


#: a task that failed this often on database errors is acknowledged as failed like any other
REDELIVER_AT_MOST = 10
RETRY_PREFIX = "retry-"


def _transient_database_error(task: dict) -> bool:
    text = str(task.get("result") or "")
    return "OperationalError" in text or "InterfaceError" in text


def _redeliver(task: dict) -> None:
    """A task that failed because the database went away (restart, failover, a terminated backend) is not
    acknowledged: django-q2 would drop it (`max_attempts` 1, DLV-15), and the work it carried (a walker hop, a
    pool job) with it. Its broker row stays and the supervisor hands it out again shortly. Tasks are
    idempotent; one that failed `REDELIVER_AT_MOST` times is given up as before."""
    directory = os.environ.get(ACTIVITY_DIR_ENV)
    ack_id = task.get("ack_id")
    if not directory or not ack_id:
        return
    try:
        from django_q.models import Task

        failures = Task.objects.filter(id=task.get("id")).values_list("attempt_count", flat=True).first() or 0
    except Exception:
        failures = 0
    if failures + 1 >= REDELIVER_AT_MOST:
        return
    task.pop("ack_id", None)  # the monitor acknowledges only tasks that still carry it
    with contextlib.suppress(OSError):
        Path(directory, f"{RETRY_PREFIX}{ack_id}").write_text("")


def connect_activity_receivers() -> None:
    """Called from `OwlatConfig.ready()`; the receivers do nothing unless run under `run_cluster`."""
    from django_q.signals import post_execute_in_worker, post_spawn, pre_execute

    post_spawn.connect(on_worker_spawned, dispatch_uid="owlat.clusters.spawned")
    pre_execute.connect(on_task_started, dispatch_uid="owlat.clusters.started")
    post_execute_in_worker.connect(on_task_finished, dispatch_uid="owlat.clusters.finished")


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


@dataclass
class Activity:
    workers: list[int]  # live worker pids
    busy: list[int]  # live workers running a task now
    progress_at: float | None  # wall-clock time a task last started or finished (any worker, dead or alive)
    lost_tasks: list[str]  # broker ids of tasks to hand out again: their worker died, or the database failed


def read_activity(directory: Path) -> Activity:
    """What the workers of one cluster do; files of dead workers are read once, then removed."""
    workers: list[int] = []
    busy: list[int] = []
    progress_at: float | None = None
    lost: list[str] = []
    for path in directory.iterdir():
        if path.name.startswith(RETRY_PREFIX):  # a task that failed on a database error: hand it out again
            lost.append(path.name[len(RETRY_PREFIX) :])
            with contextlib.suppress(OSError):
                path.unlink()
            continue
        try:
            pid = int(path.name)
            state, _, ack_id = path.read_text().strip().partition(" ")
            mtime = path.stat().st_mtime
        except (ValueError, OSError):
            continue
        if state in (BUSY, DONE):
            progress_at = max(progress_at or 0.0, mtime)
        if pid_alive(pid):
            workers.append(pid)
            if state == BUSY:
                busy.append(pid)
        else:
            if state == BUSY and ack_id:
                lost.append(ack_id)
            with contextlib.suppress(OSError):
                path.unlink()
    return Activity(sorted(workers), sorted(busy), progress_at, lost)


# --- the queues as the broker sees them ---------------------------------------------------------------------


def oldest_task_age_seconds(queue: str, *, now: dt.datetime | None = None) -> float | None:
    """Seconds since the oldest task still in the broker for `queue` was enqueued (ORM broker), else None."""
    from django_q.models import OrmQ
    from django_q.signing import SignedPackage

    if "orm" not in settings.Q_CLUSTER:
        return None
    row = OrmQ.objects.filter(key=queue).order_by("id").only("payload").first()
    if row is None:
        return None
    try:
        started = SignedPackage.loads(row.payload).get("started")
    except Exception:
        return None
    if started is None:
        return None
    return max(0.0, ((now or timezone.now()) - started).total_seconds())


def unlock_tasks(queue: str, ids: list[str] | None = None) -> int:
    """Make tasks a dead cluster or worker had pulled (locked for django-q2's `retry`) visible again at once:
    the given broker ids, or every locked task of the queue — only safe when no other cluster of the queue is
    alive, which the caller checks. Tasks are idempotent, so running one again is safe."""
    from django_q.models import OrmQ

    if "orm" not in settings.Q_CLUSTER:
        return 0
    now = timezone.now()
    qs = OrmQ.objects.filter(key=queue, lock__gt=now)
    if ids is not None:
        qs = qs.filter(id__in=[int(i) for i in ids if str(i).isdigit()])
    return qs.update(lock=now)


def other_live_clusters(queue: str, me: str) -> list[str]:
    from owlat.models import WorkerHeartbeat

    fresh = timezone.now() - dt.timedelta(seconds=heartbeat_stale_after())
    return list(
        WorkerHeartbeat.objects.filter(name__startswith=f"cluster:{queue}@", beat_at__gte=fresh)
        .exclude(name=me)
        .values_list("name", flat=True)
    )


@dataclass
class QueueState:
    name: str
    queued: int
    oldest_task_age: float | None
    cluster_heartbeat_age: float | None
    status: str  # ok | stalled (oldest task too old) | down (cluster heartbeat stopped)


def queue_states(*, now: dt.datetime | None = None) -> list[QueueState]:
    """Per queue: tasks waiting, the oldest one's age, the newest cluster heartbeat's age and a verdict."""
    from django.db.models import Count, Max
    from django_q.models import OrmQ

    from owlat.jobs import QUEUES
    from owlat.models import WorkerHeartbeat

    now = now or timezone.now()
    counts: dict[str, int] = {}
    if "orm" in settings.Q_CLUSTER:
        counts = dict(
            OrmQ.objects.filter(key__in=QUEUES).values("key").annotate(n=Count("id")).values_list("key", "n")
        )
    limit = float(settings.HEALTH_QUEUE_AGE_DEGRADED_SECONDS)
    out = []
    for queue in QUEUES:
        newest = WorkerHeartbeat.objects.filter(name__startswith=f"cluster:{queue}@").aggregate(
            m=Max("beat_at")
        )["m"]
        beat_age = None if newest is None else max(0.0, (now - newest).total_seconds())
        age = oldest_task_age_seconds(queue, now=now) if counts.get(queue) else None
        status = "ok"
        if beat_age is not None and beat_age > heartbeat_stale_after():
            status = "down"
        elif age is not None and age > limit:
            status = "stalled"
        out.append(
            QueueState(
                queue,
                counts.get(queue, 0),
                None if age is None else round(age, 1),
                None if beat_age is None else round(beat_age, 1),
                status,
            )
        )
    return out


# --- the watchdog's verdict ---------------------------------------------------------------------------------


@dataclass
class Watch:
    """The stall rule of one cluster, fed by the supervisor every interval (pure but for the clock)."""

    stall_seconds: float
    ready_at: float | None = None  # wall-clock time the current cluster's first worker was seen

    def restarted(self) -> None:
        self.ready_at = None

    def stalled(self, *, activity: Activity, oldest_task_age: float | None, now: float | None = None) -> bool:
        now = time.time() if now is None else now
        if self.ready_at is None:
            if not activity.workers:
                return False  # still starting (Django's start-up takes seconds on a loaded machine)
            self.ready_at = now
        if oldest_task_age is None or oldest_task_age <= self.stall_seconds or activity.busy:
            return False
        last = max(self.ready_at, activity.progress_at or 0.0)
        return now - last > self.stall_seconds
