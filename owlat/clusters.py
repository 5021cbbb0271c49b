"""Liveness and progress of the django-q2 clusters, around the cluster, not in it.

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
import ctypes
import datetime as dt
import os
import signal
import socket
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from django.conf import settings
from django.utils import timezone

ACTIVITY_DIR_ENV = "OWLAT_CLUSTER_ACTIVITY_DIR"
IDLE, BUSY, DONE, DEAD = "idle", "busy", "done", "dead"


def cluster_heartbeat_name(queue: str, host: str | None = None) -> str:
    """One supervisor per queue and host: `cluster:<queue>@<host>`."""
    return f"cluster:{queue}@{(host or socket.gethostname())[:80]}"


def stamped(write: Callable[[str], Any]) -> Callable[[str], Any]:
    """`write` with the wall-clock time in front of each line (supervisor and dispatcher logs: when a worker
    was reincarnated, a cluster restarted or a sweep re-drove rows is what a fault's timeline is made of)."""

    def say(line: str) -> Any:
        return write(f"{dt.datetime.now(dt.UTC):%H:%M:%S.%f}"[:-3] + f" {line}")

    return say


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


# --- the cluster's processes die with their supervisor ----------------------------------------------------

SUPERVISOR_PID_ENV = "OWLAT_CLUSTER_SUPERVISOR_PID"
PR_SET_PDEATHSIG = 1  # <linux/prctl.h>
_forking_parent = 0


def die_with_parent(parent: int) -> None:
    """Ask the kernel to SIGKILL this process when `parent` (the thread that forked or started it) dies
    (Linux `prctl(PR_SET_PDEATHSIG)`); if it already died, die now."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_PDEATHSIG) failed")
    if os.getppid() != parent and not pid_alive(parent):  # it died before the request took effect
        os.kill(os.getpid(), signal.SIGKILL)


def _remember_forking_parent() -> None:
    global _forking_parent
    _forking_parent = os.getpid()


def _die_with_forking_parent() -> None:
    die_with_parent(_forking_parent)


def bind_to_supervisor() -> None:
    """In a qcluster started by `run_cluster` (Linux): this process dies with its supervisor, and every process
    forked below it (sentinel, workers, pusher, monitor, their reincarnations) with the process that forked it,
    so a SIGKILLed supervisor (OOM killer, kill -9) leaves no cluster running unsupervised beside the one its
    restart starts. Called from `OwlatConfig.ready()`; does nothing elsewhere."""
    supervisor = os.environ.get(SUPERVISOR_PID_ENV, "")
    if not supervisor.isdigit() or not sys.platform.startswith("linux"):
        return
    os.environ.pop(SUPERVISOR_PID_ENV)  # for this process only: a program it starts is not bound by it
    die_with_parent(int(supervisor))
    os.register_at_fork(before=_remember_forking_parent, after_in_child=_die_with_forking_parent)


def process_state(pid: int) -> str | None:
    """The process's state letter (`R`, `S`, `D`, `T`, `Z` zombie, …) from /proc, None when there is no such
    process; `?` for a live process where there is no procfs."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        if Path("/proc/self/stat").exists():
            return None
    except (OSError, IndexError):
        pass
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return None
    except PermissionError:
        pass
    return "?"


def pid_alive(pid: int) -> bool:
    """Running: not gone and not a zombie. A worker that died is a zombie until its sentinel reaps it, and a
    sentinel whose guard loop is stuck never does (see `read_activity`); `kill(pid, 0)` succeeds on a zombie."""
    return process_state(pid) not in (None, "Z", "X")


#: a dead worker not reaped for this long: its sentinel's guard loop is stuck (it reaps every 0.5 s)
UNREAPED_AFTER_SECONDS = 5.0


@dataclass
class Activity:
    workers: list[int]  # live worker pids
    busy: list[int]  # live workers running a task now
    progress_at: float | None  # wall-clock time a task last started or finished (any worker, dead or alive)
    lost_tasks: list[str]  # broker ids of tasks to hand out again: their worker died, or the database failed
    unreaped_since: float | None = (
        None  # when the longest-dead worker its sentinel has not reaped was seen dead
    )


def read_activity(directory: Path, *, now: float | None = None) -> Activity:
    """What the workers of one cluster do. A dead worker's busy task is reported lost once. Files of workers
    that are gone are removed; those of zombies are kept, marked `dead`, until the sentinel reaps them.

    django-q2's sentinel reaps and replaces dead workers from its guard loop, which takes each worker's timer
    lock first. A worker killed while holding its lock (from the end of its task until the result is queued)
    leaves the guard waiting for it for ever: no worker is reaped or replaced from then on, and the ones killed
    later stay zombies — taken for live (and busy) ones, they kept a cluster that consumed nothing from ever
    looking stalled (tests/faults/test_unreaped_workers.py). `unreaped_since` tells the supervisor."""
    now = time.time() if now is None else now
    workers: list[int] = []
    busy: list[int] = []
    progress_at: float | None = None
    lost: list[str] = []
    unreaped_since: float | None = None
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
        process = process_state(pid)
        if process not in (None, "Z", "X"):
            workers.append(pid)
            if state == BUSY:
                busy.append(pid)
            continue
        if state == BUSY and ack_id:
            lost.append(ack_id)
        if process is None:
            with contextlib.suppress(OSError):
                path.unlink()
        elif state != DEAD:  # a zombie, first seen: reported once, kept until reaped
            with contextlib.suppress(OSError):
                path.write_text(DEAD)
            unreaped_since = min(unreaped_since or now, now)
        else:
            unreaped_since = min(unreaped_since or mtime, mtime)
    return Activity(sorted(workers), sorted(busy), progress_at, lost, unreaped_since)


# --- the queues as the broker sees them ---------------------------------------------------------------------


_redis_brokers: dict[str, Any] = {}


def redis_broker(queue: str) -> Any | None:
    """django-q2's Redis broker of `queue` (one per queue and process, so its connection pool is reused), or
    None when the ORM broker is configured."""
    if "redis" not in settings.Q_CLUSTER:
        return None
    if queue not in _redis_brokers:
        from django_q.brokers import get_broker

        _redis_brokers[queue] = get_broker(queue)
    return _redis_brokers[queue]


def _enqueued_at(payload: Any) -> dt.datetime | None:
    """When the task in a broker payload was enqueued: django-q2's `async_task` (and `owlat.jobs.enqueue_many`)
    sign the task with its `started` time."""
    from django_q.signing import SignedPackage

    try:
        started = SignedPackage.loads(payload).get("started")
    except Exception:
        return None
    return started if isinstance(started, dt.datetime) else None


def oldest_task_age_seconds(
    queue: str, *, now: dt.datetime | None = None, broker: Any | None = None
) -> float | None:
    """Seconds since the oldest task still in the broker for `queue` was enqueued, else None.

    ORM broker: the queue's first row (by id; a task being run keeps its row until acknowledged). Redis broker
    (`broker` or the configured one): the head of django-q2's list, where `rpush` appends and the pusher's
    `blpop` takes, read with LINDEX — the enqueue time is in the signed payload, so nothing is added to the
    write path. Tasks already pulled by a cluster are no longer in Redis and do not count."""
    from django_q.models import OrmQ

    broker = broker if broker is not None else redis_broker(queue)
    if broker is not None:
        payload = broker.connection.lindex(broker.list_key, 0)
    elif "orm" in settings.Q_CLUSTER:
        payload = OrmQ.objects.filter(key=queue).order_by("id").values_list("payload", flat=True).first()
    else:
        return None
    started = None if payload is None else _enqueued_at(payload)
    if started is None:
        return None
    return max(0.0, ((now or timezone.now()) - started).total_seconds())


def queued_tasks(queues: tuple[str, ...] | list[str]) -> dict[str, int]:
    """Tasks in the broker per queue (ORM: waiting or being run; Redis: waiting, LLEN of each list)."""
    from django.db.models import Count
    from django_q.models import OrmQ

    if "redis" in settings.Q_CLUSTER:
        out = {}
        for queue in queues:
            broker = redis_broker(queue)
            out[queue] = int(broker.connection.llen(broker.list_key))
        return out
    if "orm" not in settings.Q_CLUSTER:
        return {}
    return dict(
        OrmQ.objects.filter(key__in=queues).values("key").annotate(n=Count("id")).values_list("key", "n")
    )


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
    from django.db.models import Max

    from owlat.jobs import QUEUES
    from owlat.models import WorkerHeartbeat

    now = now or timezone.now()
    counts = queued_tasks(QUEUES)
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

    def guard_stuck(self, *, activity: Activity, now: float | None = None) -> bool:
        """The sentinel has not reaped a dead worker for `UNREAPED_AFTER_SECONDS`: it will never reap or replace
        one again, so restart the cluster — once no live worker is busy (the in-flight task finishes first)."""
        now = time.time() if now is None else now
        since = activity.unreaped_since
        return since is not None and now - since > UNREAPED_AFTER_SECONDS and not activity.busy
