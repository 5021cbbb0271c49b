"""Background work and time (spec D-05, D-15).

`enqueue()` is the one helper every caller uses for background work:
- immediate work goes straight to django-q2 (inside the caller's transaction with the ORM broker on the
  default database, after commit with Redis);
- future work becomes a `DueTask` row in the caller's transaction; `run_due_tasks` hands it to django-q2 when due.
"""

from __future__ import annotations

import datetime as dt
import logging
import os
import socket
from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.db import connection, transaction
from django.db.models import Q
from django.utils import timezone

from owlat.models import DueTask, WorkerHeartbeat

logger = logging.getLogger(__name__)

QUEUES = ("default", "transactional", "campaign", "inbox")
_IMMEDIATE_SLACK = dt.timedelta(milliseconds=20)


def task_path(func: Callable[..., Any] | str) -> str:
    if isinstance(func, str):
        return func
    return f"{func.__module__}.{func.__qualname__}"


def _push(path: str, args: list | tuple, kwargs: dict | None, queue: str | None) -> None:
    """Hand a task to django-q2 now (no on_commit). With the test switch `OWLAT_TEST_DELIVER_TWICE` every task
    is handed over twice (what a Redis redelivery or a crashed worker does), to prove tasks are duplicate-safe."""
    from django_q.tasks import async_task

    options: dict[str, Any] = {}
    if queue and queue != "default":
        options["cluster"] = queue
    for _ in range(2 if getattr(settings, "OWLAT_TEST_DELIVER_TWICE", False) else 1):
        async_task(path, *args, **(kwargs or {}), **options)


def enqueue(
    func: Callable[..., Any] | str,
    *args: Any,
    at: dt.datetime | None = None,
    queue: str | None = None,
    kwargs: dict[str, Any] | None = None,
) -> None:
    """Run `func(*args)` on the queue `queue` now, or at `at`. Arguments must be JSON-serializable ids/values."""
    path = task_path(func)
    if queue is not None and queue not in QUEUES:
        raise ValueError(f"unknown queue {queue!r}")
    if at is not None and at > timezone.now() + _IMMEDIATE_SLACK:
        DueTask.objects.create(func=path, args=list(args), kwargs=kwargs or {}, queue=queue, due_at=at)
        return
    if settings.Q_BROKER_IS_TRANSACTIONAL:
        if not kwargs and _orm_broker_direct():
            _orm_broker_write(path, [args], queue)
        else:
            _push(path, args, kwargs, queue)
    else:
        transaction.on_commit(lambda: _push(path, args, kwargs, queue))


def enqueue_many(
    func: Callable[..., Any] | str,
    arg_lists: list[tuple | list],
    *,
    at: dt.datetime | None = None,
    queue: str | None = None,
) -> None:
    """`enqueue(func, *args, at=at, queue=queue)` for every `args` in `arg_lists`, written in one statement: the
    due-task rows by one bulk insert, immediate tasks on the ORM broker as the broker rows django-q2's
    `async_task` would write (same signed package, `pre_enqueue` signal sent), by one bulk insert. Anything
    else (Redis, django-q2 sync mode, the test switch OWLAT_TEST_DELIVER_TWICE) goes one `enqueue` at a time."""
    path = task_path(func)
    if queue is not None and queue not in QUEUES:
        raise ValueError(f"unknown queue {queue!r}")
    if not arg_lists:
        return
    if at is not None and at > timezone.now() + _IMMEDIATE_SLACK:
        DueTask.objects.bulk_create(
            [DueTask(func=path, args=list(args), kwargs={}, queue=queue, due_at=at) for args in arg_lists]
        )
        return
    if not _orm_broker_direct():
        for args in arg_lists:
            enqueue(path, *args, queue=queue)
        return
    _orm_broker_write(path, arg_lists, queue)


def _orm_broker_direct() -> bool:
    """Whether immediate tasks may be written as broker rows directly: the ORM broker on the default database
    (part of the caller's transaction), not django-q2's sync mode nor the test switch OWLAT_TEST_DELIVER_TWICE."""
    from django_q.conf import Conf

    return (
        settings.Q_BROKER_IS_TRANSACTIONAL
        and not Conf.SYNC
        and not getattr(settings, "OWLAT_TEST_DELIVER_TWICE", False)
    )


_broker_keys: dict[str | None, str] = {}  # queue → the broker's list key (fixed while the process runs)


def _orm_broker_rows(
    path: str, arg_lists: list[tuple | list], queue: str | None
) -> list[tuple[str, str, Any]]:
    """(key, payload, lock) of the ORM broker rows django-q2's `async_task` would write for `path(*args)` per
    `args` (same signed package; the `pre_enqueue` signal is sent)."""
    from django_q.brokers import get_broker
    from django_q.conf import Conf
    from django_q.humanhash import uuid as q_uuid
    from django_q.signals import pre_enqueue
    from django_q.signing import SignedPackage

    cluster = queue if queue and queue != "default" else None
    key = _broker_keys.get(cluster)
    if key is None:
        key = _broker_keys[cluster] = get_broker(cluster).list_key or Conf.CLUSTER_NAME
    now = timezone.now()
    rows = []
    for args in arg_lists:
        name, task_id = q_uuid()
        task: dict[str, Any] = {"id": task_id, "name": name, "func": path, "args": tuple(args)}
        if cluster:
            task["cluster"] = cluster
        if Conf.CACHED:
            task["cached"] = Conf.CACHED
        if Conf.ACK_FAILURES:
            task["ack_failure"] = Conf.ACK_FAILURES
        task["kwargs"] = {}
        task["started"] = now
        pre_enqueue.send(sender="django_q", task=task)
        rows.append((key, SignedPackage.dumps(task), now))
    return rows


def _orm_broker_write(path: str, arg_lists: list[tuple | list], queue: str | None) -> None:
    """The ORM broker rows of `_orm_broker_rows` in one insert (`owlat.sql.orm_broker_insert` on PostgreSQL,
    `bulk_create` elsewhere)."""
    from django.db import connections
    from django_q.conf import Conf
    from django_q.models import OrmQ

    rows = _orm_broker_rows(path, arg_lists, queue)
    db = connections[Conf.ORM]
    if db.vendor != "postgresql":
        OrmQ.objects.using(Conf.ORM).bulk_create([OrmQ(key=k, payload=p, lock=t) for k, p, t in rows])
        return
    from owlat.sql import orm_broker_insert

    orm_broker_insert(db, OrmQ._meta.db_table, rows)


def dispatch_due_tasks(*, now: dt.datetime | None = None, batch: int = 200) -> int:
    """Hand every due task to django-q2; returns how many were handed over.

    Rows are claimed with SKIP LOCKED under a lease: a dispatcher that dies after claiming loses nothing,
    its rows become claimable again when the lease runs out. With the ORM broker, the hand-off and the
    row's deletion commit together; with Redis the task is pushed first (at-least-once; tasks are idempotent).
    """
    rows, lease_until = claim_due_tasks(now=now, batch=batch)
    return sum(1 for row in rows if hand_over_due_task(row, lease_until=lease_until))


def claim_due_tasks(*, now: dt.datetime | None = None, batch: int = 200) -> tuple[list[DueTask], dt.datetime]:
    """Lease up to `batch` due, unleased rows (committed before returning); returns them and the lease end."""
    now = now or timezone.now()
    lease_until = now + dt.timedelta(seconds=settings.DUE_TASK_LEASE_SECONDS)
    with transaction.atomic():
        qs = DueTask.objects.filter(due_at__lte=now).filter(
            Q(lease_until__isnull=True) | Q(lease_until__lt=now)
        )
        if connection.features.has_select_for_update_skip_locked:
            qs = qs.select_for_update(skip_locked=True)
        rows = list(qs.order_by("due_at")[:batch])
        if rows:
            DueTask.objects.filter(id__in=[r.id for r in rows]).update(lease_until=lease_until)
    return rows, lease_until


def hand_over_due_task(row: DueTask, *, lease_until: dt.datetime) -> bool:
    """Push one leased row to django-q2 and delete it; False if the lease was lost or the push failed."""
    try:
        with transaction.atomic():
            # Delete first, and only while our lease still holds: if it ran out and another dispatcher
            # leased the row meanwhile, it is theirs now (0 rows) and we must not push it too. With the ORM
            # broker a failed push rolls the delete back, so the row is retried after the lease.
            deleted, _ = DueTask.objects.filter(id=row.id, lease_until=lease_until).delete()
            if not deleted:
                return False
            _push(row.func, row.args, row.kwargs, row.queue)
    except Exception:
        logger.exception("could not hand due task %s (%s) to the queue; it will be retried", row.id, row.func)
        return False
    return True


def next_due_in(*, now: dt.datetime | None = None) -> float | None:
    """Seconds until the next unleased due task, or None if there is none."""
    now = now or timezone.now()
    row = (
        DueTask.objects.filter(Q(lease_until__isnull=True) | Q(lease_until__lt=now))
        .order_by("due_at")
        .first()
    )
    if row is None:
        return None
    return max(0.0, (row.due_at - now).total_seconds())


def heartbeat(name: str) -> None:
    """Record a sign of life for the health endpoint (D-15)."""
    WorkerHeartbeat.objects.update_or_create(
        name=name,
        defaults={"beat_at": timezone.now(), "pid": os.getpid(), "host": socket.gethostname()[:200]},
    )


def heartbeat_task(name: str) -> str:
    """Enqueued on each queue by the dispatcher: proves that queue's workers are taking work."""
    heartbeat(name)
    return f"heartbeat {name}"


def run_sweeps() -> dict[str, str]:
    """Run every registered recovery sweep once (`owlat.registry.register_sweep`); a failing sweep is logged
    and does not stop the others. Called by the due-task dispatcher every `QUEUE_SWEEP_SECONDS`."""
    from owlat.registry import sweeps

    out: dict[str, str] = {}
    for name, fn in sweeps().items():
        try:
            out[name] = fn()
        except Exception:
            logger.exception("sweep %s failed; it runs again next round", name)
            connection.close()
            out[name] = "failed"
    return out


def newest_heartbeat_age_seconds() -> float | None:
    newest = WorkerHeartbeat.objects.order_by("-beat_at").values_list("beat_at", flat=True).first()
    if newest is None:
        return None
    return max(0.0, (timezone.now() - newest).total_seconds())
